// The live turn widget (anywidget ES module; no build step, no network).
//
// State comes from the kernel as synced traits (see widgets/state.py); user actions go back as
// custom messages {kind, turn_id, ...} (see widgets/view.py). Wordings the static rendering
// shares (a plan's heading, the compaction note) arrive in the items, written by Python
// (notebook/lines.py), so they are defined once. Model text is never inserted as HTML: the
// small Markdown renderer below builds DOM nodes and sets only textContent, so no tag or
// script in model output can reach the page.

const TOOL_MARK = {
  queued: "queued", waiting: "waiting for approval", running: "running", done: "done",
  error: "error", denied: "denied", cancelled: "cancelled", blocked: "blocked",
};
const STEER_WORDS = {
  queued: "queued: rides on the next tool result",
  delivered: "delivered",
  next_prompt: "sent as the next prompt",
  dropped: "dropped",
};

// -- DOM helpers ------------------------------------------------------------------------------

function h(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// -- a safe Markdown subset -------------------------------------------------------------------

const SAFE_URL = /^(https?:|mailto:)/i;

function inline(text) {
  // code spans, **bold**, *italic* / _italic_ (not inside words), ~~strike~~, [link](http...)
  const out = [];
  const pattern = /(`+)([\s\S]*?[^`])\1(?!`)|\*\*([^*]+)\*\*|(?<!\w)__([^_]+)__(?!\w)|\*([^*\s][^*]*)\*|(?<!\w)_([^_\s][^_]*)_(?!\w)|~~([^~]+)~~|\[([^\]]+)\]\(([^)\s]+)\)/g;
  let last = 0;
  let match;
  while ((match = pattern.exec(text)) !== null) {
    if (match.index > last) out.push(document.createTextNode(text.slice(last, match.index)));
    if (match[1]) out.push(h("code", { text: match[2].replace(/^ ([\s\S]*) $/, "$1") }));
    else if (match[3] || match[4]) out.push(h("strong", {}, inline(match[3] || match[4])));
    else if (match[5] || match[6]) out.push(h("em", {}, inline(match[5] || match[6])));
    else if (match[7]) out.push(h("del", {}, inline(match[7])));
    else if (match[8]) {
      const url = match[9];
      out.push(SAFE_URL.test(url)
        ? h("a", { href: url, target: "_blank", rel: "noopener noreferrer" }, inline(match[8]))
        : document.createTextNode(match[0]));
    }
    last = pattern.lastIndex;
  }
  if (last < text.length) out.push(document.createTextNode(text.slice(last)));
  return out;
}

function splitRow(line) {
  return line.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((cell) => cell.trim());
}

export function renderMarkdown(source) {
  const root = h("div", { class: "blitz-md" });
  const lines = String(source || "").replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  let paragraph = [];
  const flush = () => {
    if (paragraph.length) root.append(h("p", {}, inline(paragraph.join(" "))));
    paragraph = [];
  };
  while (i < lines.length) {
    const line = lines[i];
    const fence = line.match(/^\s*(```+|~~~+)\s*([\w+-]*)/);
    if (fence) {
      flush();
      const body = [];
      i += 1;
      while (i < lines.length && !lines[i].trim().startsWith(fence[1])) body.push(lines[i++]);
      i += 1; // the closing fence (absent while a block still streams in)
      root.append(h("pre", { class: "blitz-code", "data-lang": fence[2] || null }, h("code", { text: body.join("\n") })));
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
    if (/^\s*\|.*\|\s*$/.test(line) && i + 1 < lines.length && /^\s*\|?[\s:-]+\|[\s|:-]*$/.test(lines[i + 1])) {
      flush();
      const head = splitRow(line);
      const rows = [];
      i += 2;
      while (i < lines.length && /^\s*\|.*\|\s*$/.test(lines[i])) rows.push(splitRow(lines[i++]));
      root.append(h("table", {},
        h("thead", {}, h("tr", {}, head.map((cell) => h("th", {}, inline(cell))))),
        h("tbody", {}, rows.map((row) => h("tr", {}, row.map((cell) => h("td", {}, inline(cell))))))));
      continue;
    }
    const item = line.match(/^\s*([-*+]|\d+[.)])\s+(.*)$/);
    if (item) {
      flush();
      const ordered = /\d/.test(item[1]);
      const list = h(ordered ? "ol" : "ul");
      while (i < lines.length) {
        const next = lines[i].match(/^\s*([-*+]|\d+[.)])\s+(.*)$/);
        if (next) list.append(h("li", {}, inline(next[2])));
        else if (/^\s{2,}\S/.test(lines[i]) && list.lastChild) list.lastChild.append(" ", ...inline(lines[i].trim()));
        else break;
        i += 1;
      }
      root.append(list);
      continue;
    }
    if (/^\s*>/.test(line)) {
      flush();
      const quoted = [];
      while (i < lines.length && /^\s*>/.test(lines[i])) quoted.push(lines[i++].replace(/^\s*>\s?/, ""));
      root.append(h("blockquote", {}, renderMarkdown(quoted.join("\n"))));
      continue;
    }
    if (line.trim() === "") flush();
    else paragraph.push(line.trim());
    i += 1;
  }
  flush();
  return root;
}

// -- pieces of the widget ---------------------------------------------------------------------

function shortArgs(args) {
  const text = Object.entries(args || {}).map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(", ");
  return text.length > 80 ? `${text.slice(0, 79)}…` : text;
}

function seconds(ms) {
  return `${(Math.max(0, ms) / 1000).toFixed(1)} s`;
}

// How a tool asks to be shown (its ToolPresentation): the widget never tells tools apart by name.
function presentation(tool) {
  return tool.presentation || {};
}

function toolMark(tool) {
  if (tool.status === "waiting" && presentation(tool).plan_review) return "waiting for review";
  return TOOL_MARK[tool.status] || tool.status;
}

// Images a tool showed (run_python's figures), scaled to the card. Built once per call and
// reused on every redraw: decoding a large data URL again at each card change would be waste.
// Only image/* data URLs of what the kernel sent (never model text) are ever set as src.
function toolImages(tool, cards) {
  const images = cards.images[tool.id] || [];
  const omitted = tool.images_omitted || 0;
  if (!images.length && !omitted) return null;
  let node = cards.imageNodes.get(tool.id);
  if (!node || node.blitzCount !== images.length) {
    node = h("div", { class: "blitz-tool-images" },
      images.filter((image) => /^image\/(png|jpeg|gif|webp)$/.test(image.media_type)).map((image, index) => h("img", {
        class: "blitz-tool-image", src: `data:${image.media_type};base64,${image.data}`,
        alt: `image ${index + 1} of ${images.length} from ${tool.name}`,
      })),
      omitted ? h("div", { class: "blitz-note", text: `${omitted} more image${omitted === 1 ? "" : "s"} not shown` }) : null);
    node.blitzCount = images.length;
    cards.imageNodes.set(tool.id, node);
    if (images.length) cards.open.add(tool.id); // shown inline: a card with images opens once
  }
  return node;
}

// A sub-agent's turn inside its invoke_agent card: its text and tool cards, nested
// again for its own sub-agents. Call ids are unique only within one agent's turn, so cards are
// keyed by their path ("c1/c2").
function nestedTurn(tool, cards, key) {
  if (!tool.nested || !tool.nested.length) return null;
  const agent = (tool.args && tool.args.agent) || "sub-agent";
  return h("div", { class: "blitz-nested", role: "group", "aria-label": `${agent} turn` },
    h("div", { class: "blitz-label", text: `${agent}` }),
    tool.nested.map((item) => itemNode(item, cards, `${key}/`)).filter(Boolean));
}

function toolCard(tool, cards, prefix = "") {
  const openCards = cards.open;
  const key = `${prefix}${tool.id}`;
  const images = prefix ? null : toolImages(tool, cards);
  const details = h("details", { class: `blitz-tool blitz-tool-${tool.status}`, "data-tool-id": key });
  // a running sub-agent opens its card once, so its work shows as it streams
  if (presentation(tool).streams_subagent && tool.status === "running" && !cards.seen.has(key)) openCards.add(key);
  cards.seen.add(key);
  if (openCards.has(key)) details.open = true;
  details.addEventListener("toggle", () => {
    if (details.open) openCards.add(key);
    else openCards.delete(key);
  });
  const elapsed = h("span", { class: "blitz-elapsed" });
  const tick = () => {
    const end = tool.ended_ms || Date.now();
    elapsed.textContent = tool.status === "queued" || tool.status === "waiting" ? "" : seconds(end - tool.started_ms);
  };
  tick();
  details.blitzTick = tool.ended_ms ? null : tick;
  details.append(
    h("summary", {},
      h("span", { class: "blitz-status", text: toolMark(tool) }),
      h("span", { class: "blitz-tool-name", text: tool.name }),
      h("span", { class: "blitz-args", text: `(${shortArgs(tool.args)})` }),
      elapsed),
    h("div", { class: "blitz-tool-body" },
      h("div", { class: "blitz-label", text: "arguments" }),
      h("pre", { class: "blitz-code" }, h("code", { text: JSON.stringify(tool.args, null, 2) })),
      nestedTurn(tool, cards, key),
      tool.error || tool.preview
        ? [h("div", { class: "blitz-label", text: tool.status === "blocked" ? "blocked" : tool.error ? "error" : "result" }),
           h("pre", { class: "blitz-code blitz-result" }, h("code", { text: tool.error || tool.preview }))]
        : null,
      images));
  return details;
}

function itemNode(item, cards, prefix = "") {
  switch (item.kind) {
    case "text":
      return renderMarkdown(item.text);
    case "thought":
      return h("details", { class: "blitz-thought" }, h("summary", { text: "Thinking" }), renderMarkdown(item.text));
    case "tool":
      // a plan that was answered shows as the plan item that follows
      if (presentation(item).plan_review && item.status === "done") return null;
      return toolCard(item, cards, prefix);
    case "plan":
      return h("div", { class: `blitz-plan blitz-plan-${item.status}` },
        h("div", { class: "blitz-label", text: item.heading }),
        item.status === "rejected" ? h("div", { class: "blitz-plan-reason", text: item.reason || "no reason given" }) : null,
        renderMarkdown(item.plan));
    case "compaction":
      return h("div", { class: "blitz-note", text: item.line });
    case "error":
      return h("div", { class: "blitz-error", role: "alert", text: `Stopped: ${item.message}` });
    default:
      return null;
  }
}

function reviewCard(review, send) {
  // The plan waits for the user; the reason box is read by the model on Reject.
  if (!review || !review.review_id) return null;
  const reason = h("input", {
    type: "text", class: "blitz-reason", placeholder: "what to change (optional, the model reads it)",
    "aria-label": "Reason for rejecting",
  });
  const buttons = [];
  const answer = (approved) => () => {
    for (const button of buttons) button.disabled = true;
    send({ kind: "review", review_id: review.review_id, approved, reason: approved ? null : reason.value });
  };
  buttons.push(
    h("button", { class: "blitz-allow", type: "button", onclick: answer(true) }, "Approve plan"),
    h("button", { class: "blitz-deny", type: "button", onclick: answer(false) }, "Reject"));
  reason.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" || event.isComposing || !reason.value.trim()) return;
    event.preventDefault();
    answer(false)();
  });
  return h("div", { class: "blitz-review", role: "group", "aria-label": "Plan review" },
    h("div", { class: "blitz-label", text: "Proposed plan — approve it to carry it out" }),
    renderMarkdown(review.plan),
    h("div", { class: "blitz-buttons" }, buttons, reason));
}

// What a call will change: a unified diff with its added and removed lines marked,
// a cell's old and new source, or the code. Always text nodes, never HTML. Long ones fold, with
// their line count in the summary.
const FOLD_LINES = 30;
const PREVIEW_LABEL = { diff: "diff", cell: "cell source", code: "code", text: "preview" };

function diffLine(line) {
  let kind = "";
  if (line.startsWith("+++") || line.startsWith("---")) kind = "blitz-diff-file";
  else if (line.startsWith("@@")) kind = "blitz-diff-hunk";
  else if (line.startsWith("+")) kind = "blitz-diff-add";
  else if (line.startsWith("-")) kind = "blitz-diff-del";
  return h("span", { class: `blitz-diff-line ${kind}`.trim(), text: `${line}\n` });
}

function previewNode(call) {
  const text = call.preview || "";
  const kind = call.preview_kind || "text";
  const lines = text.replace(/\n$/, "").split("\n");
  const code = kind === "diff" ? h("code", {}, lines.map(diffLine)) : h("code", { text });
  const pre = h("pre", { class: `blitz-code blitz-preview blitz-preview-${kind}`, "aria-label": `${PREVIEW_LABEL[kind] || "preview"} of ${call.name}` }, code);
  const label = `${PREVIEW_LABEL[kind] || "preview"} · ${lines.length} line${lines.length === 1 ? "" : "s"}`;
  if (lines.length <= FOLD_LINES) return [h("div", { class: "blitz-label", text: label }), pre];
  return h("details", { class: "blitz-preview-fold" }, h("summary", { text: `${label} (folded)` }), pre);
}

// The turn stopped at its step limit; Continue runs more steps in the same turn.
function offerCard(offer, send) {
  if (!offer || !offer.offer_id) return null;
  const buttons = [];
  const answer = (go) => () => {
    for (const button of buttons) button.disabled = true;
    send({ kind: "continue", offer_id: offer.offer_id, go });
  };
  buttons.push(
    h("button", { class: "blitz-allow", type: "button", onclick: answer(true) }, "Continue"),
    h("button", { type: "button", onclick: answer(false) }, "End turn"));
  return h("div", { class: "blitz-offer", role: "group", "aria-label": "Step limit reached" },
    h("div", { class: "blitz-note", text: offer.line }),
    h("div", { class: "blitz-buttons" }, buttons));
}

function permissionCard(model, pending, send) {
  if (!pending || !pending.request_id) return null;
  const names = [...new Set(pending.calls.map((call) => call.name))].join(", ");
  const asker = pending.agent ? `${pending.agent} asks to run ${names}` : "Permission needed";
  const card = h("div", { class: "blitz-permission", role: "group", "aria-label": "Permission request" },
    h("div", { class: "blitz-label", text: asker }),
    pending.waiting ? h("div", { class: "blitz-note", text: `${pending.waiting} more request${pending.waiting === 1 ? "" : "s"} waiting` }) : null);
  for (const call of pending.calls) {
    const reason = h("input", {
      type: "text", class: "blitz-reason", placeholder: "reason (optional, the model reads it)",
      "aria-label": `Reason for denying ${call.name} (optional)`,
    });
    const decide = (decision) => () => send({
      kind: "decide", request_id: pending.request_id, call_id: call.id, decision,
      reason: decision === "deny" ? reason.value : null,
    });
    const done = Boolean(call.decision);
    card.append(h("div", { class: "blitz-call", role: "group", "aria-label": `${call.name} call` },
      h("div", { class: "blitz-call-head" }, h("span", { class: "blitz-tool-name", text: call.name }),
        done ? h("span", { class: "blitz-status", text: call.decision === "deny" ? "denied" : "allowed" }) : null),
      call.reason ? h("div", { class: "blitz-ask-reason", text: `why it asks: ${call.reason}` }) : null,
      call.preview ? previewNode(call) : h("pre", { class: "blitz-code" }, h("code", { text: JSON.stringify(call.args, null, 2) })),
      done ? null : h("div", { class: "blitz-buttons" },
        h("button", { class: "blitz-allow", type: "button", onclick: decide("allow") }, "Allow once"),
        h("button", { type: "button", onclick: decide("always"), title: "Allow this tool for the rest of the session" }, "Always allow"),
        h("button", { class: "blitz-deny", type: "button", onclick: decide("deny") }, "Deny"),
        reason)));
  }
  return card;
}

function footerText(footer, header, phase) {
  const parts = [footer.model || header.model || "model"];
  const cached = footer.cached_tokens ? ` (${footer.cached_tokens.toLocaleString()} cached)` : "";
  parts.push(`${(footer.input_tokens || 0).toLocaleString()} in${cached} · ${(footer.output_tokens || 0).toLocaleString()} out`);
  parts.push(footer.cost || "unpriced");
  if (footer.saving) parts.push(footer.saving);
  const elapsed = footer.elapsed_s !== null && footer.elapsed_s !== undefined
    ? footer.elapsed_s * 1000 : Date.now() - (header.started_ms || Date.now());
  parts.push(seconds(elapsed));
  parts.push(footer.stop_reason || footer.progress
    || (phase === "finishing" ? "finishing side questions" : "running"));
  if (footer.context) parts.push(footer.context);
  for (const note of footer.switches || []) parts.push(note);
  return parts.join(" · ");
}

// -- the widget -------------------------------------------------------------------------------

function render({ model, el }) {
  const turnId = () => model.get("turn_id");
  const send = (message) => model.send({ ...message, turn_id: turnId() });
  // Cards keep their open/closed state and their image nodes across redraws.
  const cards = { open: new Set(), seen: new Set(), imageNodes: new Map(), images: {} };

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
  const stopHint = h("span", { class: "blitz-hint" });
  const footer = h("div", { class: "blitz-footer" });

  const steerBox = h("input", {
    type: "text", class: "blitz-steer", "aria-label": "Steer the agent",
    placeholder: "Steer the agent (Enter sends)",
  });
  const asideBox = h("input", {
    type: "text", class: "blitz-aside", "aria-label": "Ask aside",
    placeholder: "Ask aside: a side question, not recorded (Enter sends)",
  });
  const stopButton = h("button", { type: "button", class: "blitz-stop", title: "Stop after this step; press again to stop now" }, "Stop");
  const enter = (box, build) => box.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" || event.shiftKey || event.isComposing) return;
    event.preventDefault();
    const value = box.value.trim();
    if (!value) return;
    send(build(value));
    box.value = "";
  });
  enter(steerBox, (text) => ({ kind: "steer", text }));
  enter(asideBox, (question) => ({ kind: "aside", question }));
  stopButton.addEventListener("click", () => send({ kind: "stop" }));

  const controls = h("div", { class: "blitz-controls" }, steerBox, asideBox, stopButton, stopHint);
  const root = h("div", { class: "blitz-turn" },
    prompt, chips, body, live, permission, reviewSlot, offerSlot, steerLog, asideLog, notice, controls, footer);
  el.replaceChildren(root);

  const drawHeader = () => {
    const header = model.get("header") || {};
    prompt.replaceChildren(...(header.label
      ? [h("span", { class: "blitz-carry-out", text: header.label })]
      : [h("span", { class: "blitz-label", text: "Prompt" }), h("span", { text: header.prompt || "" })]));
    chips.replaceChildren(...(header.attachments || []).map((chip) => h("span", {
      class: `blitz-chip blitz-chip-${chip.kind}`, role: "listitem", title: `@${chip.name} (${chip.kind})`, text: chip.label,
    })));
  };
  const drawItems = () => {
    cards.images = model.get("images") || {};
    body.replaceChildren(...(model.get("items") || []).map((item) => itemNode(item, cards)).filter(Boolean));
  };
  const drawLive = () => {
    const state = model.get("live") || {};
    const parts = [];
    if (state.thought) parts.push(h("details", { class: "blitz-thought" }, h("summary", { text: "Thinking…" }), renderMarkdown(state.thought)));
    if (state.text) parts.push(renderMarkdown(state.text));
    live.replaceChildren(...parts);
  };
  const drawPermission = () => {
    permission.replaceChildren(...[permissionCard(model, model.get("pending"), send)].filter(Boolean));
  };
  const drawReview = () => {
    reviewSlot.replaceChildren(...[reviewCard(model.get("review"), send)].filter(Boolean));
  };
  const drawOffer = () => {
    offerSlot.replaceChildren(...[offerCard(model.get("offer"), send)].filter(Boolean));
  };
  const drawSteers = () => {
    steerLog.replaceChildren(...(model.get("steers") || []).map((steer) => h("li", { class: `blitz-steer-${steer.status}` },
      h("span", { text: `↪ ${steer.text}` }),
      h("span", { class: "blitz-status", text: ` ${STEER_WORDS[steer.status] || steer.status} ${steer.detail || ""}`.trimEnd() }))));
  };
  const drawAsides = () => {
    asideLog.replaceChildren(...(model.get("asides") || []).map((aside) => h("div", { class: "blitz-aside-entry", role: "note" },
      h("div", { class: "blitz-label", text: "Aside (not recorded)" }),
      h("div", { class: "blitz-aside-question", text: aside.question }),
      aside.answer ? renderMarkdown(aside.answer) : null,
      aside.status === "thinking" && !aside.answer ? h("div", { class: "blitz-note", text: "thinking…" }) : null,
      aside.error ? h("div", { class: aside.status === "cancelled" ? "blitz-note" : "blitz-error", text: aside.error }) : null)));
  };
  const drawControls = () => {
    const phase = model.get("phase");
    const stopping = model.get("stopping");
    const running = phase === "running";
    steerBox.disabled = !running;
    asideBox.disabled = !running;
    stopButton.disabled = phase === "done" || stopping === "force";
    stopHint.textContent = stopping === "graceful" ? "stopping after this step; press Stop again to stop now"
      : stopping === "force" ? "stopping now" : "";
    controls.hidden = phase === "done";
  };
  const drawFooter = () => {
    footer.textContent = footerText(model.get("footer") || {}, model.get("header") || {}, model.get("phase"));
  };
  const drawNotice = () => {
    const lines = (model.get("notice") || "").split("\n").filter(Boolean);
    notice.replaceChildren(...lines.map((line) => h("div", { class: "blitz-notice", role: "note", text: `⚠ ${line}` })));
  };

  const draws = {
    header: drawHeader, items: drawItems, live: drawLive, pending: drawPermission, review: drawReview, offer: drawOffer, steers: drawSteers,
    asides: drawAsides, phase: () => { drawControls(); drawFooter(); }, stopping: drawControls,
    footer: drawFooter, notice: drawNotice, images: drawItems,
  };
  const handlers = [];
  for (const [name, draw] of Object.entries(draws)) {
    draw();
    const handler = () => draw();
    model.on(`change:${name}`, handler);
    handlers.push([name, handler]);
  }
  drawControls();

  // Elapsed times tick here, in the browser: the kernel sends no message for them.
  const timer = setInterval(() => {
    for (const card of body.querySelectorAll("details.blitz-tool")) if (card.blitzTick) card.blitzTick();
    if (model.get("phase") !== "done") drawFooter();
  }, 250);

  send({ kind: "ready" });
  return () => {
    clearInterval(timer);
    for (const [name, handler] of handlers) model.off(`change:${name}`, handler);
  };
}

export default { render };
