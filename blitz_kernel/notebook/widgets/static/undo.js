// Built from labextension/widget/src/undo.ts by `npm run build:widget`: do not edit.
// The sources, how they are built and what checks them: docs/widget.md.
function h(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === void 0 || value === null || value === false) {
      continue;
    }
    if (key === "class") {
      node.className = String(value);
    } else if (key === "text") {
      node.textContent = String(value);
    } else if (key.startsWith("on") && typeof value === "function") {
      node.addEventListener(key.slice(2), value);
    } else {
      node.setAttribute(key, value === true ? "" : String(value));
    }
  }
  append(node, children);
  return node;
}
function append(node, children) {
  for (const child of children) {
    if (Array.isArray(child)) {
      append(node, child);
    } else if (child !== null && child !== void 0 && child !== false) {
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
  }
}
function diffLine(line) {
  let kind = "";
  if (line.startsWith("+++") || line.startsWith("---")) {
    kind = "blitz-diff-file";
  } else if (line.startsWith("@@")) {
    kind = "blitz-diff-hunk";
  } else if (line.startsWith("+")) {
    kind = "blitz-diff-add";
  } else if (line.startsWith("-")) {
    kind = "blitz-diff-del";
  }
  return h("span", { class: `blitz-diff-line ${kind}`.trim(), text: `${line}
` });
}
function diffLines(diff) {
  return diff.replace(/\n$/, "").split("\n").map(diffLine);
}
function diffBlock(diff) {
  return h("pre", { class: "blitz-review-diff" }, h("code", {}, diffLines(diff)));
}
function sourceBlock(label, source) {
  return h(
    "div",
    { class: "blitz-review-source" },
    h("div", { class: "blitz-review-label", text: label }),
    h("pre", { class: "blitz-review-diff" }, h("code", { text: source ?? "(no cell)" }))
  );
}
function changeRow(change, busy, turnId, send) {
  const decided = change.status === "reverted";
  const conflict = change.status === "conflict";
  const decide = (decision) => () => send({ kind: "review_change", turn_id: turnId, change_id: change.id, decision });
  const keep = h("button", { type: "button", class: "blitz-keep", text: "Keep" });
  keep.disabled = busy || decided || change.status === "kept";
  keep.addEventListener("click", decide("keep"));
  const revert = h("button", { type: "button", class: "blitz-revert", text: conflict ? "Revert anyway" : "Revert" });
  revert.disabled = busy || decided;
  revert.addEventListener("click", decide(conflict ? "force" : "revert"));
  const head = h(
    "div",
    { class: "blitz-review-head" },
    h("code", { class: "blitz-review-id", text: change.id }),
    h("span", { class: "blitz-review-summary", text: change.summary }),
    h("span", { class: "blitz-review-status", text: change.status }),
    keep,
    revert
  );
  const row = h(
    "div",
    { class: "blitz-review-change" },
    head,
    change.note ? h("div", { class: "blitz-review-note", text: change.note }) : null,
    change.kind === "file" && change.diff ? diffBlock(change.diff) : null,
    change.kind === "cell" ? [sourceBlock("before", change.source_before), sourceBlock("after", change.source_after)] : null
  );
  row.dataset.status = change.status;
  row.dataset.id = change.id;
  return row;
}
const EVENTS = ["change:status", "change:report", "change:changes", "change:panel"];
function render({ model, el }) {
  const review = h("button", { type: "button", class: "blitz-review-button" });
  const undo2 = h("button", { type: "button", class: "blitz-undo-button" });
  const panel = h("div", { class: "blitz-review-panel" });
  const message = h("div", { class: "blitz-undo-report", role: "status" });
  const root = h("div", { class: "blitz-undo" }, h("div", { class: "blitz-undo-actions" }, review, undo2), panel, message);
  el.replaceChildren(root);
  const turnId = () => model.get("turn_id") || "";
  const send = (command) => model.send(command);
  const draw = () => {
    const status = model.get("status") || "ready";
    const changes = model.get("changes") || [];
    const open = model.get("panel");
    const busy = status === "running" || status === "done";
    review.hidden = changes.length === 0;
    review.textContent = open ? "Review changes ▾" : "Review changes";
    review.setAttribute("aria-expanded", open ? "true" : "false");
    review.disabled = status === "running";
    const label = changes.length ? "Undo all" : "Undo this turn";
    undo2.textContent = status === "done" ? "Undone" : status === "running" ? "Working…" : label;
    undo2.disabled = busy;
    panel.hidden = !open;
    panel.replaceChildren(...open ? changes.map((change) => changeRow(change, busy, turnId(), send)) : []);
    message.textContent = model.get("report") || "";
    message.hidden = !message.textContent;
    root.dataset.status = status;
  };
  review.addEventListener("click", () => {
    if (model.get("panel")) {
      model.set("panel", false);
      model.save_changes();
      return;
    }
    send({ kind: "review_open", turn_id: turnId() });
  });
  undo2.addEventListener("click", () => {
    if (undo2.disabled) {
      return;
    }
    send({ kind: "undo", turn_id: turnId() });
  });
  draw();
  for (const event of EVENTS) {
    model.on(event, draw);
  }
  return () => {
    for (const event of EVENTS) {
      model.off(event, draw);
    }
  };
}
const undo = { render };
export {
  undo as default
};
