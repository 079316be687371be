// Review changes and Undo all: the controls under a finished turn's static rendering (the
// anywidget ES module UndoButton loads, built from this folder by `npm run build:widget`,
// docs/widget.md). The kernel does the work when a click's message arrives; this view only
// draws the buttons, the change list and the status and report the kernel sends back.

import { h } from './dom';
import type { RenderProps, UndoCommand, UndoModel } from './model';
import { type ChangeEntry, changeRow } from './review';

const EVENTS = ['change:status', 'change:report', 'change:changes', 'change:panel'];

function render({ model, el }: RenderProps<UndoModel>): () => void {
  const review = h('button', { type: 'button', class: 'blitz-review-button' });
  const undo = h('button', { type: 'button', class: 'blitz-undo-button' });
  const panel = h('div', { class: 'blitz-review-panel' });
  // the report is a short list of lines (files, cells, variables): UI text with its line
  // breaks kept, wrapped to the cell, not a wide monospace block
  const message = h('div', { class: 'blitz-undo-report', role: 'status' });
  const root = h('div', { class: 'blitz-undo' }, h('div', { class: 'blitz-undo-actions' }, review, undo), panel, message);
  el.replaceChildren(root);
  const turnId = (): string => model.get('turn_id') || '';
  const send = (command: UndoCommand): void => model.send(command);

  const draw = (): void => {
    const status = model.get('status') || 'ready';
    // the trait is a list of plain dicts on the Python side; ReviewedChange is their type
    const changes = (model.get('changes') || []) as unknown as ChangeEntry[];
    const open = model.get('panel');
    const busy = status === 'running' || status === 'done';
    review.hidden = changes.length === 0;
    review.textContent = open ? 'Review changes ▾' : 'Review changes';
    review.setAttribute('aria-expanded', open ? 'true' : 'false');
    review.disabled = status === 'running';
    const label = changes.length ? 'Undo all' : 'Undo this turn';
    undo.textContent = status === 'done' ? 'Undone' : status === 'running' ? 'Working…' : label;
    undo.disabled = busy;
    panel.hidden = !open;
    panel.replaceChildren(...(open ? changes.map(change => changeRow(change, busy, turnId(), send)) : []));
    message.textContent = model.get('report') || '';
    message.hidden = !message.textContent;
    root.dataset.status = status;
  };
  review.addEventListener('click', () => {
    if (model.get('panel')) {
      model.set('panel', false); // closing is the view's own business
      model.save_changes();
      return;
    }
    send({ kind: 'review_open', turn_id: turnId() });
  });
  undo.addEventListener('click', () => {
    if (undo.disabled) {
      return;
    }
    send({ kind: 'undo', turn_id: turnId() });
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

export default { render };
