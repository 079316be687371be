/**
 * "Undo this turn": one button under a finished turn's static rendering (the anywidget ESM
 * module of blitz_kernel/notebook/widgets/undo.py, built into static/undo.js by
 * scripts/build_widgets.mjs). The kernel does the work (Workspace.undo) when the click's comm
 * message arrives; this view only shows the button, and the status and report the kernel
 * sends back as traits. The report is set as textContent: it names files and cells, never
 * HTML. A status this view does not know is logged once and shown as the button's first state.
 */

import { Dropped } from '../src/dropped';
import type { UndoMessage, UndoWidgetState } from '../src/generated/protocol';
import type { Cleanup, RenderProps } from './anywidget';

type Status = UndoWidgetState['status'];
const STATUSES: readonly Status[] = ['ready', 'running', 'done', 'blocked', 'failed'];
const LABELS: Record<Status, string> = {
  ready: 'Undo this turn',
  running: 'Undoing…',
  done: 'Undone',
  blocked: 'Undo this turn',
  failed: 'Undo this turn'
};

export const DROPPED = new Dropped('the Undo this turn button');

/** The status to show: the kernel's, or `ready` for one this view does not know. */
export function shownStatus(value: unknown): Status {
  if (STATUSES.includes(value as Status)) {
    return value as Status;
  }
  DROPPED.drop({ kind: 'status' }, `unknown status ${JSON.stringify(value)}`);
  return 'ready';
}

export function render({ model, el }: RenderProps<UndoWidgetState, UndoMessage>): Cleanup {
  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'blitz-undo-button';
  // the report is a short list of lines (files, cells, variables): UI text with its line
  // breaks kept, wrapped to the cell, not a wide monospace block
  const message = document.createElement('div');
  message.className = 'blitz-undo-report';
  message.setAttribute('role', 'status');
  const root = document.createElement('div');
  root.className = 'blitz-undo';
  root.append(button, message);
  el.replaceChildren(root);

  const draw = (): void => {
    const status = shownStatus(model.get('status'));
    button.textContent = LABELS[status];
    button.disabled = status === 'done' || status === 'running';
    const report = model.get('report');
    message.textContent = typeof report === 'string' ? report : '';
    message.hidden = !message.textContent;
    root.dataset.status = status;
  };
  button.addEventListener('click', () => {
    if (!button.disabled) {
      model.send({ kind: 'undo', turn_id: model.get('turn_id') });
    }
  });
  draw();
  model.on('change:status', draw);
  model.on('change:report', draw);
  return () => {
    model.off('change:status', draw);
    model.off('change:report', draw);
  };
}

export default { render };
