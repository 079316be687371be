// Review changes and Undo all: the controls under a finished turn's static rendering.
// The kernel does the work (Workspace.undo, Workspace.revert, review.keep) when a click's comm
// message arrives; this view only draws the buttons, the change list and the status and
// report the kernel sends back as traits. Every text is set as textContent: it names files,
// cells and variables and shows diffs, never HTML.

function h(tag, attrs = {}, children = []) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "text") node.textContent = value;
    else if (key === "class") node.className = value;
    else node.setAttribute(key, value);
  }
  node.append(...children);
  return node;
}

// a unified diff, one span a line, coloured by what the line is
function diffBlock(diff) {
  const lines = diff.replace(/\n$/, "").split("\n").map((line) => {
    let kind = "";
    if (line.startsWith("+++") || line.startsWith("---")) kind = "blitz-diff-file";
    else if (line.startsWith("@@")) kind = "blitz-diff-hunk";
    else if (line.startsWith("+")) kind = "blitz-diff-add";
    else if (line.startsWith("-")) kind = "blitz-diff-del";
    return h("span", { class: `blitz-diff-line ${kind}`.trim(), text: `${line}\n` });
  });
  return h("pre", { class: "blitz-review-diff" }, [h("code", {}, lines)]);
}

function sourceBlock(label, source) {
  return h("div", { class: "blitz-review-source" }, [
    h("div", { class: "blitz-review-label", text: label }),
    h("pre", { class: "blitz-review-diff" }, [h("code", { text: source ?? "(no cell)" })]),
  ]);
}

function render({ model, el }) {
  const review = h("button", { type: "button", class: "blitz-review-button" });
  const undo = h("button", { type: "button", class: "blitz-undo-button" });
  const panel = h("div", { class: "blitz-review-panel" });
  // the report is a short list of lines (files, cells, variables): UI text with its line
  // breaks kept, wrapped to the cell, not a wide monospace block
  const message = h("div", { class: "blitz-undo-report", role: "status" });
  const root = h("div", { class: "blitz-undo" }, [
    h("div", { class: "blitz-undo-actions" }, [review, undo]),
    panel,
    message,
  ]);
  el.replaceChildren(root);
  const turnId = () => model.get("turn_id");

  const changeRow = (change, busy) => {
    const decided = change.status === "reverted";
    const keep = h("button", { type: "button", class: "blitz-keep", text: "Keep" });
    keep.disabled = busy || decided || change.status === "kept";
    const conflict = change.status === "conflict";
    const revert = h("button", {
      type: "button",
      class: "blitz-revert",
      text: conflict ? "Revert anyway" : "Revert",
    });
    revert.disabled = busy || decided;
    const send = (decision) => () =>
      model.send({ kind: "review_change", turn_id: turnId(), change_id: change.id, decision });
    keep.addEventListener("click", send("keep"));
    revert.addEventListener("click", send(conflict ? "force" : "revert"));
    const head = h("div", { class: "blitz-review-head" }, [
      h("code", { class: "blitz-review-id", text: change.id }),
      h("span", { class: "blitz-review-summary", text: change.summary }),
      h("span", { class: "blitz-review-status", text: change.status }),
      keep,
      revert,
    ]);
    const parts = [head];
    if (change.note) parts.push(h("div", { class: "blitz-review-note", text: change.note }));
    if (change.kind === "file" && change.diff) parts.push(diffBlock(change.diff));
    if (change.kind === "cell") {
      parts.push(sourceBlock("before", change.source_before), sourceBlock("after", change.source_after));
    }
    const row = h("div", { class: "blitz-review-change" }, parts);
    row.dataset.status = change.status;
    row.dataset.id = change.id;
    return row;
  };

  const draw = () => {
    const status = model.get("status");
    const changes = model.get("changes") || [];
    const open = model.get("panel");
    const busy = status === "running" || status === "done";
    review.hidden = changes.length === 0;
    review.textContent = open ? "Review changes ▾" : "Review changes";
    review.setAttribute("aria-expanded", open ? "true" : "false");
    review.disabled = status === "running";
    const label = changes.length ? "Undo all" : "Undo this turn";
    undo.textContent = status === "done" ? "Undone" : status === "running" ? "Working…" : label;
    undo.disabled = busy;
    panel.hidden = !open;
    panel.replaceChildren(...(open ? changes.map((change) => changeRow(change, busy)) : []));
    message.textContent = model.get("report") || "";
    message.hidden = !message.textContent;
    root.dataset.status = status;
  };
  review.addEventListener("click", () => {
    if (model.get("panel")) {
      model.set("panel", false); // closing is the view's own business
      model.save_changes();
      return;
    }
    model.send({ kind: "review_open", turn_id: turnId() });
  });
  undo.addEventListener("click", () => {
    if (undo.disabled) return;
    model.send({ kind: "undo", turn_id: turnId() });
  });
  draw();
  const events = ["change:status", "change:report", "change:changes", "change:panel"];
  for (const event of events) model.on(event, draw);
  return () => {
    for (const event of events) model.off(event, draw);
  };
}

export default { render };
