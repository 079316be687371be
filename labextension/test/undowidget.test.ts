// @vitest-environment jsdom
/**
 * The Review changes and Undo all controls rendered into a DOM (jsdom) from the state the
 * kernel syncs, with no kernel and no browser: the buttons in each status, the change list
 * with its diffs and cell sources, and the commands each click sends.
 */

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import type { ReviewedChange, UndoWidgetState } from '../src/generated/protocol';
import undo from '../widget/src/undo';
import { MemoryModel, first, undoState } from './widgetmodel';

type Entry = ReviewedChange & { summary: string };

let el: HTMLElement;
let cleanup: (() => void) | null = null;

function render(overrides: Partial<UndoWidgetState> = {}): MemoryModel<UndoWidgetState> {
  const model = new MemoryModel(undoState(overrides));
  cleanup = undo.render({ model, el });
  return model;
}

const $ = (selector: string): HTMLElement => first(el, selector);

const FILE: Entry = {
  id: '1f1',
  turn: 0,
  key: 'file:calc.py',
  status: 'pending',
  note: null,
  kind: 'file',
  path: 'calc.py',
  created: false,
  added: 1,
  removed: 1,
  diff: '--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-rate = 1\n+rate = 2\n',
  summary: 'file calc.py +1 −1'
};
const CELL: Entry = {
  id: '1c1',
  turn: 0,
  key: 'cell:2',
  status: 'conflict',
  note: 'the cell was edited since the turn',
  kind: 'cell',
  index: 2,
  action: 'replace',
  cell_id: 'abc',
  source_before: 'x = 1',
  source_after: null,
  outputs_changed: false,
  summary: 'cell 3 replaced'
};
const VARIABLE: Entry = {
  id: '1v1',
  turn: 0,
  key: 'variable:sales',
  status: 'kept',
  note: null,
  kind: 'variable',
  name: 'sales',
  type_before: 'unbound',
  type_after: 'DataFrame 7×3',
  summary: 'variable sales unbound → DataFrame 7×3'
};
const changes = (...entries: Entry[]): UndoWidgetState['changes'] => entries as unknown as UndoWidgetState['changes'];

beforeEach(() => {
  el = document.createElement('div');
  document.body.replaceChildren(el);
});

afterEach(() => {
  cleanup?.();
  cleanup = null;
});

describe('Undo all', () => {
  it('is Undo this turn with no change list, and Review changes is hidden', () => {
    const model = render();
    expect($('.blitz-review-button').hidden).toBe(true);
    const button = $('.blitz-undo-button') as HTMLButtonElement;
    expect(button.type).toBe('button');
    expect(button.textContent).toBe('Undo this turn');
    button.click();
    expect(model.sent).toEqual([{ kind: 'undo', turn_id: 't1' }]);
  });

  it('works, then says Undone with the report; nothing is sent while busy', () => {
    const model = render({ changes: changes(FILE) });
    const button = $('.blitz-undo-button') as HTMLButtonElement;
    expect(button.textContent).toBe('Undo all');
    expect($('.blitz-undo-report').hidden).toBe(true);
    model.set('status', 'running');
    expect(button.textContent).toBe('Working…');
    expect(button.disabled).toBe(true);
    expect(($('.blitz-review-button') as HTMLButtonElement).disabled).toBe(true);
    button.dispatchEvent(new MouseEvent('click'));
    expect(model.sent).toEqual([]);
    model.set('report', 'restored calc.py');
    model.set('status', 'done');
    expect(button.textContent).toBe('Undone');
    expect(button.disabled).toBe(true);
    const report = $('.blitz-undo-report');
    expect(report.getAttribute('role')).toBe('status');
    expect(report.hidden).toBe(false);
    expect(report.textContent).toBe('restored calc.py');
    expect($('.blitz-undo').dataset.status).toBe('done');
  });

  it('shows why it is blocked', () => {
    render({ status: 'blocked', report: 'undo the later turns first (%blitz_rewind 2)' });
    expect($('.blitz-undo').dataset.status).toBe('blocked');
    expect($('.blitz-undo-report').textContent).toBe('undo the later turns first (%blitz_rewind 2)');
    expect(($('.blitz-undo-button') as HTMLButtonElement).disabled).toBe(false);
  });
});

describe('Review changes', () => {
  it('asks the kernel to open the panel, and closes it itself', () => {
    const model = render({ changes: changes(FILE) });
    const review = $('.blitz-review-button') as HTMLButtonElement;
    expect(review.textContent).toBe('Review changes');
    expect(review.getAttribute('aria-expanded')).toBe('false');
    expect($('.blitz-review-panel').hidden).toBe(true);
    review.click();
    expect(model.sent).toEqual([{ kind: 'review_open', turn_id: 't1' }]);
    model.set('panel', true);
    expect(review.textContent).toBe('Review changes ▾');
    expect(review.getAttribute('aria-expanded')).toBe('true');
    review.click();
    expect(model.get('panel')).toBe(false);
    expect(model.saved).toBe(1);
    expect(model.sent).toHaveLength(1);
    expect($('.blitz-review-panel').hidden).toBe(true);
    expect($('.blitz-review-panel').childNodes).toHaveLength(0);
  });

  it('lists each change with its diff or sources and Keep / Revert as its status allows', () => {
    const model = render({ changes: changes(FILE, CELL, VARIABLE), panel: true });
    const rows = Array.from(el.querySelectorAll<HTMLElement>('.blitz-review-change'));
    expect(rows.map(row => [row.dataset.id, row.dataset.status])).toEqual([
      ['1f1', 'pending'],
      ['1c1', 'conflict'],
      ['1v1', 'kept']
    ]);
    const [file, cell, variable] = rows;
    expect(file.querySelector('.blitz-review-summary')?.textContent).toBe('file calc.py +1 −1');
    expect(file.querySelector('.blitz-review-status')?.textContent).toBe('pending');
    expect(Array.from(file.querySelectorAll('.blitz-diff-line')).map(line => line.className)).toEqual([
      'blitz-diff-line blitz-diff-file',
      'blitz-diff-line blitz-diff-file',
      'blitz-diff-line blitz-diff-hunk',
      'blitz-diff-line blitz-diff-del',
      'blitz-diff-line blitz-diff-add'
    ]);
    expect(cell.querySelector('.blitz-review-note')?.textContent).toBe('the cell was edited since the turn');
    expect(Array.from(cell.querySelectorAll('.blitz-review-source')).map(block => block.textContent)).toEqual([
      'beforex = 1',
      'after(no cell)'
    ]);
    const revertAnyway = cell.querySelector('.blitz-revert') as HTMLButtonElement;
    expect(revertAnyway.textContent).toBe('Revert anyway');
    expect((variable.querySelector('.blitz-keep') as HTMLButtonElement).disabled).toBe(true);
    expect((variable.querySelector('.blitz-revert') as HTMLButtonElement).disabled).toBe(false);
    (file.querySelector('.blitz-keep') as HTMLButtonElement).click();
    (file.querySelector('.blitz-revert') as HTMLButtonElement).click();
    revertAnyway.click();
    expect(model.sent).toEqual([
      { kind: 'review_change', turn_id: 't1', change_id: '1f1', decision: 'keep' },
      { kind: 'review_change', turn_id: 't1', change_id: '1f1', decision: 'revert' },
      { kind: 'review_change', turn_id: 't1', change_id: '1c1', decision: 'force' }
    ]);
  });

  it('offers nothing on a reverted change, nor while an undo runs', () => {
    const model = render({ changes: changes({ ...FILE, status: 'reverted', diff: '' }), panel: true });
    const row = $('.blitz-review-change');
    expect(row.querySelector('pre')).toBeNull();
    expect((row.querySelector('.blitz-keep') as HTMLButtonElement).disabled).toBe(true);
    expect((row.querySelector('.blitz-revert') as HTMLButtonElement).disabled).toBe(true);
    model.set('changes', changes(FILE));
    model.set('status', 'running');
    const buttons = Array.from(el.querySelectorAll<HTMLButtonElement>('.blitz-review-change button'));
    expect(buttons.map(button => button.disabled)).toEqual([true, true]);
  });

  it('unsubscribes on clean-up', () => {
    const model = render();
    cleanup?.();
    cleanup = null;
    expect(model.subscribed()).toBe(0);
  });
});
