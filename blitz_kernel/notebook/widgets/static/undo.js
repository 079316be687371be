// "Undo this turn": one button under a finished turn's static rendering.
// The kernel does the work (Workspace.undo) when the click's comm message arrives; this view
// only shows the button, and the status and report the kernel sends back as traits. The
// report is set as textContent: it names files and cells, never HTML.

function render({ model, el }) {
  const button = document.createElement("button");
  button.type = "button";
  button.className = "blitz-undo-button";
  // the report is a short list of lines (files, cells, variables): UI text with its line
  // breaks kept, wrapped to the cell, not a wide monospace block
  const message = document.createElement("div");
  message.className = "blitz-undo-report";
  message.setAttribute("role", "status");
  const root = document.createElement("div");
  root.className = "blitz-undo";
  root.append(button, message);
  el.replaceChildren(root);

  const draw = () => {
    const status = model.get("status");
    button.textContent = status === "done" ? "Undone" : status === "running" ? "Undoing…" : "Undo this turn";
    button.disabled = status === "done" || status === "running";
    message.textContent = model.get("report") || "";
    message.hidden = !message.textContent;
    root.dataset.status = status;
  };
  button.addEventListener("click", () => {
    if (button.disabled) return;
    model.send({ kind: "undo", turn_id: model.get("turn_id") });
  });
  draw();
  model.on("change:status", draw);
  model.on("change:report", draw);
  return () => {
    model.off("change:status", draw);
    model.off("change:report", draw);
  };
}

export default { render };
