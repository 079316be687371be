// Built from labextension/widget/src/turn.ts by `npm run build:widget`: do not edit.
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
function present(...nodes) {
  return nodes.filter((node) => node !== null && node !== void 0);
}
const SAFE_URL = /^(https?:|mailto:)/i;
const INLINE = /(`+)([\s\S]*?[^`])\1(?!`)|\*\*([^*]+)\*\*|(?<!\w)__([^_]+)__(?!\w)|\*([^*\s][^*]*)\*|(?<!\w)_([^_\s][^_]*)_(?!\w)|~~([^~]+)~~|\[([^\]]+)\]\(([^)\s]+)\)/g;
const ITEM = /^\s*([-*+]|\d+[.)])\s+(.*)$/;
const TABLE_ROW = /^\s*\|.*\|\s*$/;
function inline(text) {
  const out = [];
  const pattern = new RegExp(INLINE.source, "g");
  let last = 0;
  let match;
  while ((match = pattern.exec(text)) !== null) {
    if (match.index > last) {
      out.push(document.createTextNode(text.slice(last, match.index)));
    }
    if (match[1]) {
      out.push(h("code", { text: match[2].replace(/^ ([\s\S]*) $/, "$1") }));
    } else if (match[3] || match[4]) {
      out.push(h("strong", {}, inline(match[3] || match[4])));
    } else if (match[5] || match[6]) {
      out.push(h("em", {}, inline(match[5] || match[6])));
    } else if (match[7]) {
      out.push(h("del", {}, inline(match[7])));
    } else if (match[8]) {
      const url = match[9];
      out.push(
        SAFE_URL.test(url) ? h("a", { href: url, target: "_blank", rel: "noopener noreferrer" }, inline(match[8])) : document.createTextNode(match[0])
      );
    }
    last = pattern.lastIndex;
  }
  if (last < text.length) {
    out.push(document.createTextNode(text.slice(last)));
  }
  return out;
}
function splitRow(line) {
  return line.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((cell) => cell.trim());
}
function renderMarkdown(source) {
  const root = h("div", { class: "blitz-md" });
  const lines = String(source || "").replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  let paragraph = [];
  const flush = () => {
    if (paragraph.length) {
      root.append(h("p", {}, inline(paragraph.join(" "))));
    }
    paragraph = [];
  };
  while (i < lines.length) {
    const line = lines[i];
    const fence = line.match(/^\s*(```+|~~~+)\s*([\w+-]*)/);
    if (fence) {
      flush();
      const body = [];
      i += 1;
      while (i < lines.length && !lines[i].trim().startsWith(fence[1])) {
        body.push(lines[i++]);
      }
      i += 1;
      root.append(
        h("pre", { class: "blitz-code", "data-lang": fence[2] || null }, h("code", { text: body.join("\n") }))
      );
      continue;
    }
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    if (heading) {
      flush();
      const level = Math.min(6, heading[1].length + 2);
      root.append(h(`h${level}`, {}, inline(heading[2])));
      i += 1;
      continue;
    }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      flush();
      root.append(h("hr"));
      i += 1;
      continue;
    }
    if (TABLE_ROW.test(line) && i + 1 < lines.length && /^\s*\|?[\s:-]+\|[\s|:-]*$/.test(lines[i + 1])) {
      flush();
      const head = splitRow(line);
      const rows = [];
      i += 2;
      while (i < lines.length && TABLE_ROW.test(lines[i])) {
        rows.push(splitRow(lines[i++]));
      }
      root.append(
        h(
          "table",
          {},
          h("thead", {}, h("tr", {}, head.map((cell) => h("th", {}, inline(cell))))),
          h(
            "tbody",
            {},
            rows.map((row) => h("tr", {}, row.map((cell) => h("td", {}, inline(cell)))))
          )
        )
      );
      continue;
    }
    const item = line.match(ITEM);
    if (item) {
      flush();
      const ordered = /\d/.test(item[1]);
      const list = h(ordered ? "ol" : "ul");
      while (i < lines.length) {
        const next = lines[i].match(ITEM);
        if (next) {
          list.append(h("li", {}, inline(next[2])));
        } else if (/^\s{2,}\S/.test(lines[i]) && list.lastChild) {
          list.lastChild.append(" ", ...inline(lines[i].trim()));
        } else {
          break;
        }
        i += 1;
      }
      root.append(list);
      continue;
    }
    if (/^\s*>/.test(line)) {
      flush();
      const quoted = [];
      while (i < lines.length && /^\s*>/.test(lines[i])) {
        quoted.push(lines[i++].replace(/^\s*>\s?/, ""));
      }
      root.append(h("blockquote", {}, renderMarkdown(quoted.join("\n"))));
      continue;
    }
    if (line.trim() === "") {
      flush();
    } else {
      paragraph.push(line.trim());
    }
    i += 1;
  }
  flush();
  return root;
}
function liveNodes(state) {
  const parts = [];
  if (state.thought) {
    parts.push(h("details", { class: "blitz-thought" }, h("summary", { text: "Thinking…" }), renderMarkdown(state.thought)));
  }
  if (state.text) {
    parts.push(renderMarkdown(state.text));
  }
  return parts;
}
const STEER_WORDS = {
  queued: "queued: rides on the next tool result",
  delivered: "delivered",
  next_prompt: "sent as the next prompt",
  dropped: "dropped"
};
function steerNodes(steers) {
  return (steers || []).map(
    (steer) => h(
      "li",
      { class: `blitz-steer-${steer.status}` },
      h("span", { text: `↪ ${steer.text}` }),
      h("span", {
        class: "blitz-status",
        text: ` ${STEER_WORDS[steer.status] || steer.status} ${steer.detail || ""}`.trimEnd()
      })
    )
  );
}
function asideNodes(asides) {
  return (asides || []).map(
    (aside) => h(
      "div",
      { class: "blitz-aside-entry", role: "note" },
      h("div", { class: "blitz-label", text: "Aside (not recorded)" }),
      h("div", { class: "blitz-aside-question", text: aside.question }),
      aside.answer ? renderMarkdown(aside.answer) : null,
      aside.status === "thinking" && !aside.answer ? h("div", { class: "blitz-note", text: "thinking…" }) : null,
      aside.error ? h("div", { class: aside.status === "cancelled" ? "blitz-note" : "blitz-error", text: aside.error }) : null
    )
  );
}
function newCards() {
  return { open: /* @__PURE__ */ new Set(), seen: /* @__PURE__ */ new Set(), imageNodes: /* @__PURE__ */ new Map(), images: {} };
}
function sendOnEnter(box, send, build) {
  box.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" || event.shiftKey || event.isComposing) {
      return;
    }
    event.preventDefault();
    const value = box.value.trim();
    if (!value) {
      return;
    }
    send(build(value));
    box.value = "";
  });
}
function controls(send) {
  const steerBox = h("input", {
    type: "text",
    class: "blitz-steer",
    "aria-label": "Steer the agent",
    placeholder: "Steer the agent (Enter sends)"
  });
  const asideBox = h("input", {
    type: "text",
    class: "blitz-aside",
    "aria-label": "Ask aside",
    placeholder: "Ask aside: a side question, not recorded (Enter sends)"
  });
  const stopButton = h(
    "button",
    { type: "button", class: "blitz-stop", title: "Stop after this step; press again to stop now" },
    "Stop"
  );
  const stopHint = h("span", { class: "blitz-hint" });
  sendOnEnter(steerBox, send, (text) => ({ kind: "steer", text }));
  sendOnEnter(asideBox, send, (question) => ({ kind: "aside", question }));
  stopButton.addEventListener("click", () => send({ kind: "stop" }));
  const root = h("div", { class: "blitz-controls" }, steerBox, asideBox, stopButton, stopHint);
  return {
    root,
    draw(phase, stopping) {
      const running = phase === "running";
      steerBox.disabled = !running;
      asideBox.disabled = !running;
      stopButton.disabled = phase === "done" || stopping === "force";
      stopHint.textContent = stopping === "graceful" ? "stopping after this step; press Stop again to stop now" : stopping === "force" ? "stopping now" : "";
      root.hidden = phase === "done";
    }
  };
}
function shortArgs(args) {
  const text = Object.entries(args || {}).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(", ");
  return text.length > 80 ? `${text.slice(0, 79)}…` : text;
}
function seconds(ms) {
  return `${(Math.max(0, ms) / 1e3).toFixed(1)} s`;
}
function plural(count, word) {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}
function footerText(footer, header, phase, now = Date.now()) {
  const parts = [footer.model || header.model || "model"];
  const cached = footer.cached_tokens ? ` (${footer.cached_tokens.toLocaleString()} cached)` : "";
  parts.push(`${(footer.input_tokens || 0).toLocaleString()} in${cached} · ${(footer.output_tokens || 0).toLocaleString()} out`);
  parts.push(footer.cost || "unpriced");
  if (footer.saving) {
    parts.push(footer.saving);
  }
  const elapsed = footer.elapsed_s !== null && footer.elapsed_s !== void 0 ? footer.elapsed_s * 1e3 : now - (header.started_ms || now);
  parts.push(seconds(elapsed));
  parts.push(footer.stop_reason || footer.progress || (phase === "finishing" ? "finishing side questions" : "running"));
  if (footer.context) {
    parts.push(footer.context);
  }
  for (const note of footer.switches || []) {
    parts.push(note);
  }
  return parts.join(" · ");
}
function planItem(item) {
  return h(
    "div",
    { class: `blitz-plan blitz-plan-${item.status}` },
    h("div", { class: "blitz-label", text: item.heading }),
    item.status === "rejected" ? h("div", { class: "blitz-plan-reason", text: item.reason || "no reason given" }) : null,
    renderMarkdown(item.plan)
  );
}
function reviewCard(review, send) {
  if (!review || !review.review_id) {
    return null;
  }
  const reviewId = review.review_id;
  const reason = h("input", {
    type: "text",
    class: "blitz-reason",
    placeholder: "what to change (optional, the model reads it)",
    "aria-label": "Reason for rejecting"
  });
  const buttons = [];
  const answer = (approved) => () => {
    for (const button of buttons) {
      button.disabled = true;
    }
    send({ kind: "review", review_id: reviewId, approved, reason: approved ? null : reason.value });
  };
  buttons.push(
    h("button", { class: "blitz-allow", type: "button", onclick: answer(true) }, "Approve plan"),
    h("button", { class: "blitz-deny", type: "button", onclick: answer(false) }, "Reject")
  );
  reason.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" || event.isComposing || !reason.value.trim()) {
      return;
    }
    event.preventDefault();
    answer(false)();
  });
  return h(
    "div",
    { class: "blitz-review", role: "group", "aria-label": "Plan review" },
    h("div", { class: "blitz-label", text: "Proposed plan — approve it to carry it out" }),
    renderMarkdown(review.plan),
    h("div", { class: "blitz-buttons" }, buttons, reason)
  );
}
const TOOL_MARK = {
  queued: "queued",
  waiting: "waiting for approval",
  running: "running",
  done: "done",
  error: "error",
  denied: "denied",
  cancelled: "cancelled",
  blocked: "blocked"
};
const IMAGE_TYPE = /^image\/(png|jpeg|gif|webp)$/;
function presentation(tool) {
  return tool.presentation || {};
}
function toolMark(tool) {
  if (tool.status === "waiting" && presentation(tool).plan_review) {
    return "waiting for review";
  }
  return TOOL_MARK[tool.status || ""] || String(tool.status);
}
function toolImages(tool, cards) {
  const images = cards.images[tool.id] || [];
  const omitted = tool.images_omitted || 0;
  if (!images.length && !omitted) {
    return null;
  }
  let node = cards.imageNodes.get(tool.id);
  if (!node || node.blitzCount !== images.length) {
    node = h(
      "div",
      { class: "blitz-tool-images" },
      images.filter((image) => IMAGE_TYPE.test(image.media_type)).map(
        (image, index) => h("img", {
          class: "blitz-tool-image",
          src: `data:${image.media_type};base64,${image.data}`,
          alt: `image ${index + 1} of ${images.length} from ${tool.name}`
        })
      ),
      omitted ? h("div", { class: "blitz-note", text: `${omitted} more image${omitted === 1 ? "" : "s"} not shown` }) : null
    );
    node.blitzCount = images.length;
    cards.imageNodes.set(tool.id, node);
    if (images.length) {
      cards.open.add(tool.id);
    }
  }
  return node;
}
function nestedTurn(tool, cards, key, renderItem) {
  if (!tool.nested || !tool.nested.length) {
    return null;
  }
  const agent = String(tool.args && tool.args.agent || "sub-agent");
  return h(
    "div",
    { class: "blitz-nested", role: "group", "aria-label": `${agent} turn` },
    h("div", { class: "blitz-label", text: `${agent}` }),
    tool.nested.map((item) => renderItem(item, cards, `${key}/`)).filter(Boolean)
  );
}
function resultBlock(tool) {
  if (!tool.error && !tool.preview) {
    return null;
  }
  const label = tool.status === "blocked" ? "blocked" : tool.error ? "error" : "result";
  return [
    h("div", { class: "blitz-label", text: label }),
    h("pre", { class: "blitz-code blitz-result" }, h("code", { text: tool.error || tool.preview }))
  ];
}
function toolCard(tool, cards, renderItem, prefix = "") {
  const openCards = cards.open;
  const key = `${prefix}${tool.id}`;
  const images = prefix ? null : toolImages(tool, cards);
  const details = h("details", { class: `blitz-tool blitz-tool-${tool.status}`, "data-tool-id": key });
  if (presentation(tool).streams_subagent && tool.status === "running" && !cards.seen.has(key)) {
    openCards.add(key);
  }
  cards.seen.add(key);
  if (openCards.has(key)) {
    details.open = true;
  }
  details.addEventListener("toggle", () => {
    if (details.open) {
      openCards.add(key);
    } else {
      openCards.delete(key);
    }
  });
  const elapsed = h("span", { class: "blitz-elapsed" });
  const tick = () => {
    const end = tool.ended_ms || Date.now();
    elapsed.textContent = tool.status === "queued" || tool.status === "waiting" ? "" : seconds(end - tool.started_ms);
  };
  tick();
  details.blitzTick = tool.ended_ms ? null : tick;
  details.append(
    h(
      "summary",
      {},
      h("span", { class: "blitz-status", text: toolMark(tool) }),
      h("span", { class: "blitz-tool-name", text: tool.name }),
      h("span", { class: "blitz-args", text: `(${shortArgs(tool.args)})` }),
      elapsed
    ),
    h(
      "div",
      { class: "blitz-tool-body" },
      h("div", { class: "blitz-label", text: "arguments" }),
      h("pre", { class: "blitz-code" }, h("code", { text: JSON.stringify(tool.args, null, 2) })),
      nestedTurn(tool, cards, key, renderItem),
      resultBlock(tool),
      images
    )
  );
  return details;
}
function itemNode(item, cards, prefix = "") {
  switch (item.kind) {
    case "text":
      return renderMarkdown(item.text);
    case "thought":
      return h("details", { class: "blitz-thought" }, h("summary", { text: "Thinking" }), renderMarkdown(item.text));
    case "tool":
      if (presentation(item).plan_review && item.status === "done") {
        return null;
      }
      return toolCard(item, cards, itemNode, prefix);
    case "plan":
      return planItem(item);
    case "compaction":
      return h("div", { class: "blitz-note", text: item.line });
    case "error":
      return h("div", { class: "blitz-error", role: "alert", text: `Stopped: ${item.message}` });
    default:
      return null;
  }
}
function itemNodes(items, cards) {
  return (items || []).map((item) => itemNode(item, cards)).filter((node) => node !== null);
}
function noticeNodes(notice) {
  const lines = (notice || "").split("\n").filter(Boolean);
  return lines.map((line) => h("div", { class: "blitz-notice", role: "note", text: `⚠ ${line}` }));
}
function offerCard(offer, send) {
  if (!offer || !offer.offer_id) {
    return null;
  }
  const offerId = offer.offer_id;
  const buttons = [];
  const answer = (go) => () => {
    for (const button of buttons) {
      button.disabled = true;
    }
    send({ kind: "continue", offer_id: offerId, go });
  };
  buttons.push(
    h("button", { class: "blitz-allow", type: "button", onclick: answer(true) }, "Continue"),
    h("button", { type: "button", onclick: answer(false) }, "End turn")
  );
  return h(
    "div",
    { class: "blitz-offer", role: "group", "aria-label": "Step limit reached" },
    h("div", { class: "blitz-note", text: offer.line }),
    h("div", { class: "blitz-buttons" }, buttons)
  );
}
const FOLD_LINES = 30;
const PREVIEW_LABEL = { diff: "diff", cell: "cell source", code: "code", text: "preview" };
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
function previewNode(call) {
  const text = call.preview || "";
  const kind = call.preview_kind || "text";
  const lines = text.replace(/\n$/, "").split("\n");
  const code = kind === "diff" ? h("code", {}, lines.map(diffLine)) : h("code", { text });
  const name = PREVIEW_LABEL[kind] || "preview";
  const pre = h(
    "pre",
    { class: `blitz-code blitz-preview blitz-preview-${kind}`, "aria-label": `${name} of ${call.name}` },
    code
  );
  const label = `${name} · ${plural(lines.length, "line")}`;
  if (lines.length <= FOLD_LINES) {
    return [h("div", { class: "blitz-label", text: label }), pre];
  }
  return h("details", { class: "blitz-preview-fold" }, h("summary", { text: `${label} (folded)` }), pre);
}
function callCard(call, requestId, send) {
  const reason = h("input", {
    type: "text",
    class: "blitz-reason",
    placeholder: "reason (optional, the model reads it)",
    "aria-label": `Reason for denying ${call.name} (optional)`
  });
  const decide = (decision) => () => send({
    kind: "decide",
    request_id: requestId,
    call_id: call.id,
    decision,
    reason: decision === "deny" ? reason.value : null
  });
  const done = Boolean(call.decision);
  return h(
    "div",
    { class: "blitz-call", role: "group", "aria-label": `${call.name} call` },
    h(
      "div",
      { class: "blitz-call-head" },
      h("span", { class: "blitz-tool-name", text: call.name }),
      done ? h("span", { class: "blitz-status", text: call.decision === "deny" ? "denied" : "allowed" }) : null
    ),
    call.reason ? h("div", { class: "blitz-ask-reason", text: `why it asks: ${call.reason}` }) : null,
    call.preview ? previewNode(call) : h("pre", { class: "blitz-code" }, h("code", { text: JSON.stringify(call.args, null, 2) })),
    done ? null : h(
      "div",
      { class: "blitz-buttons" },
      h("button", { class: "blitz-allow", type: "button", onclick: decide("allow") }, "Allow once"),
      h(
        "button",
        { type: "button", onclick: decide("always"), title: "Allow this tool for the rest of the session" },
        "Always allow"
      ),
      h("button", { class: "blitz-deny", type: "button", onclick: decide("deny") }, "Deny"),
      reason
    )
  );
}
function permissionCard(pending, send) {
  if (!pending || !pending.request_id) {
    return null;
  }
  const calls = pending.calls || [];
  const names = [...new Set(calls.map((call) => call.name))].join(", ");
  const asker = pending.agent ? `${pending.agent} asks to run ${names}` : "Permission needed";
  const waiting = pending.waiting || 0;
  const card = h(
    "div",
    { class: "blitz-permission", role: "group", "aria-label": "Permission request" },
    h("div", { class: "blitz-label", text: asker }),
    waiting ? h("div", { class: "blitz-note", text: `${waiting} more request${waiting === 1 ? "" : "s"} waiting` }) : null
  );
  for (const call of calls) {
    card.append(callCard(call, pending.request_id, send));
  }
  return card;
}
function promptNodes(header) {
  return header.label ? [h("span", { class: "blitz-carry-out", text: header.label })] : [h("span", { class: "blitz-label", text: "Prompt" }), h("span", { text: header.prompt || "" })];
}
function chipNodes(header) {
  return (header.attachments || []).map(
    (chip) => h("span", {
      class: `blitz-chip blitz-chip-${chip.kind}`,
      role: "listitem",
      title: `@${chip.name} (${chip.kind})`,
      text: chip.label
    })
  );
}
const TICK_MS = 250;
function render({ model, el }) {
  const turnId = () => model.get("turn_id") || "";
  const send = (command) => model.send({ ...command, turn_id: turnId() });
  const cards = newCards();
  const prompt = h("div", { class: "blitz-prompt" });
  const chips = h("div", { class: "blitz-chips", role: "list", "aria-label": "Attachments" });
  const body = h("div", { class: "blitz-body", "aria-live": "polite" });
  const live = h("div", { class: "blitz-live" });
  const permission = h("div", { class: "blitz-permission-slot" });
  const reviewSlot = h("div", { class: "blitz-review-slot" });
  const offerSlot = h("div", { class: "blitz-offer-slot" });
  const steerLog = h("ul", { class: "blitz-steers", "aria-label": "Steer messages" });
  const asideLog = h("div", { class: "blitz-asides" });
  const notice = h("div", { class: "blitz-note" });
  const footer = h("div", { class: "blitz-footer" });
  const turnControls = controls(send);
  const root = h(
    "div",
    { class: "blitz-turn" },
    prompt,
    chips,
    body,
    live,
    permission,
    reviewSlot,
    offerSlot,
    steerLog,
    asideLog,
    notice,
    turnControls.root,
    footer
  );
  el.replaceChildren(root);
  const drawHeader = () => {
    const header = model.get("header") || {};
    prompt.replaceChildren(...promptNodes(header));
    chips.replaceChildren(...chipNodes(header));
  };
  const drawItems = () => {
    cards.images = model.get("images") || {};
    body.replaceChildren(...itemNodes(model.get("items"), cards));
  };
  const drawControls = () => turnControls.draw(model.get("phase"), model.get("stopping"));
  const drawFooter = () => {
    footer.textContent = footerText(model.get("footer") || {}, model.get("header") || {}, model.get("phase"));
  };
  const draws = {
    header: drawHeader,
    items: drawItems,
    live: () => live.replaceChildren(...liveNodes(model.get("live") || {})),
    pending: () => permission.replaceChildren(...present(permissionCard(model.get("pending"), send))),
    review: () => reviewSlot.replaceChildren(...present(reviewCard(model.get("review"), send))),
    offer: () => offerSlot.replaceChildren(...present(offerCard(model.get("offer"), send))),
    steers: () => steerLog.replaceChildren(...steerNodes(model.get("steers"))),
    asides: () => asideLog.replaceChildren(...asideNodes(model.get("asides"))),
    phase: () => {
      drawControls();
      drawFooter();
    },
    stopping: drawControls,
    footer: drawFooter,
    notice: () => notice.replaceChildren(...noticeNodes(model.get("notice"))),
    images: drawItems
  };
  const handlers = [];
  for (const [name, draw] of Object.entries(draws)) {
    draw();
    const handler = () => draw();
    model.on(`change:${name}`, handler);
    handlers.push([name, handler]);
  }
  drawControls();
  const timer = setInterval(() => {
    for (const card of Array.from(body.querySelectorAll("details.blitz-tool"))) {
      if (card.blitzTick) {
        card.blitzTick();
      }
    }
    if (model.get("phase") !== "done") {
      drawFooter();
    }
  }, TICK_MS);
  send({ kind: "ready" });
  return () => {
    clearInterval(timer);
    for (const [name, handler] of handlers) {
      model.off(`change:${name}`, handler);
    }
  };
}
const turn = { render };
export {
  turn as default,
  renderMarkdown
};
