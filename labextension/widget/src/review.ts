// Review changes: one row per change of the turn (its id, summary and status, Keep and Revert,
// "Revert anyway" on a change edited since the turn), with a file's coloured diff or a cell's
// sources before and after. Every text is set as textContent: it names files, cells and
// variables and shows diffs, never HTML.

import type { ReviewedChange } from '../../src/generated/protocol';
import { diffLines } from './diff';
import { h } from './dom';
import type { UndoCommand } from './model';

/** A change as the panel receives it: the engine's model with its one-line summary. */
export type ChangeEntry = ReviewedChange & { summary: string };
type Decision = 'keep' | 'revert' | 'force';

function diffBlock(diff: string): HTMLPreElement {
  return h('pre', { class: 'blitz-review-diff' }, h('code', {}, diffLines(diff)));
}

function sourceBlock(label: string, source: string | null | undefined): HTMLDivElement {
  return h(
    'div',
    { class: 'blitz-review-source' },
    h('div', { class: 'blitz-review-label', text: label }),
    h('pre', { class: 'blitz-review-diff' }, h('code', { text: source ?? '(no cell)' }))
  );
}

/** `busy`: an undo or revert runs (or the turn is undone): nothing can be decided. */
export function changeRow(
  change: ChangeEntry,
  busy: boolean,
  turnId: string,
  send: (command: UndoCommand) => void
): HTMLDivElement {
  const decided = change.status === 'reverted';
  const conflict = change.status === 'conflict';
  const decide = (decision: Decision) => (): void =>
    send({ kind: 'review_change', turn_id: turnId, change_id: change.id, decision });
  const keep = h('button', { type: 'button', class: 'blitz-keep', text: 'Keep' });
  keep.disabled = busy || decided || change.status === 'kept';
  keep.addEventListener('click', decide('keep'));
  const revert = h('button', { type: 'button', class: 'blitz-revert', text: conflict ? 'Revert anyway' : 'Revert' });
  revert.disabled = busy || decided;
  revert.addEventListener('click', decide(conflict ? 'force' : 'revert'));
  const head = h(
    'div',
    { class: 'blitz-review-head' },
    h('code', { class: 'blitz-review-id', text: change.id }),
    h('span', { class: 'blitz-review-summary', text: change.summary }),
    h('span', { class: 'blitz-review-status', text: change.status }),
    keep,
    revert
  );
  const row = h(
    'div',
    { class: 'blitz-review-change' },
    head,
    change.note ? h('div', { class: 'blitz-review-note', text: change.note }) : null,
    change.kind === 'file' && change.diff ? diffBlock(change.diff) : null,
    change.kind === 'cell'
      ? [sourceBlock('before', change.source_before), sourceBlock('after', change.source_after)]
      : null
  );
  row.dataset.status = change.status;
  row.dataset.id = change.id;
  return row;
}
