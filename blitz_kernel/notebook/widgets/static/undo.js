// Built from labextension/widgets/undo.ts by scripts/build_widgets.mjs: do not edit (npm run build:widgets).

// labextension/src/dropped.ts
var Dropped = class {
  constructor(receiver, log = (message) => console.warn(message)) {
    this.receiver = receiver;
    this.log = log;
    this.seen = /* @__PURE__ */ new Set();
  }
  /** Note that `data` was ignored; true when this was logged (the first of its kind). */
  drop(data, problem) {
    const kind = kindOf(data);
    if (this.seen.has(kind)) {
      return false;
    }
    this.seen.add(kind);
    this.log(`${this.receiver} ignored a ${kind} message it cannot use (${problem}); further ones of this kind are ignored silently`);
    return true;
  }
};
function kindOf(data) {
  if (typeof data === "object" && data !== null && !Array.isArray(data)) {
    const kind = data.kind;
    return typeof kind === "string" ? kind : "(no kind)";
  }
  return `(${data === null ? "null" : Array.isArray(data) ? "list" : typeof data})`;
}

// labextension/widgets/undo.ts
var STATUSES = ["ready", "running", "done", "blocked", "failed"];
var LABELS = {
  ready: "Undo this turn",
  running: "Undoing…",
  done: "Undone",
  blocked: "Undo this turn",
  failed: "Undo this turn"
};
var DROPPED = new Dropped("the Undo this turn button");
function shownStatus(value) {
  if (STATUSES.includes(value)) {
    return value;
  }
  DROPPED.drop({ kind: "status" }, `unknown status ${JSON.stringify(value)}`);
  return "ready";
}
function render({ model, el }) {
  const button = document.createElement("button");
  button.type = "button";
  button.className = "blitz-undo-button";
  const message = document.createElement("div");
  message.className = "blitz-undo-report";
  message.setAttribute("role", "status");
  const root = document.createElement("div");
  root.className = "blitz-undo";
  root.append(button, message);
  el.replaceChildren(root);
  const draw = () => {
    const status = shownStatus(model.get("status"));
    button.textContent = LABELS[status];
    button.disabled = status === "done" || status === "running";
    const report = model.get("report");
    message.textContent = typeof report === "string" ? report : "";
    message.hidden = !message.textContent;
    root.dataset.status = status;
  };
  button.addEventListener("click", () => {
    if (!button.disabled) {
      model.send({ kind: "undo", turn_id: model.get("turn_id") });
    }
  });
  draw();
  model.on("change:status", draw);
  model.on("change:report", draw);
  return () => {
    model.off("change:status", draw);
    model.off("change:report", draw);
  };
}
var undo_default = { render };
export {
  DROPPED,
  undo_default as default,
  render,
  shownStatus
};
