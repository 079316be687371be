// What a call will change, as the approval card and the Review changes panel show it: a
// unified diff with its file, hunk, added and removed lines marked (always text nodes, never
// HTML), or a cell's source or code as it is. Long previews fold, with their line count in
// the summary.

import type { PendingCallEntry } from '../../src/generated/protocol';
import { h } from './dom';
import { plural } from './format';
import type { Loose } from './model';

export const FOLD_LINES = 30;
const PREVIEW_LABEL: Record<string, string> = { diff: 'diff', cell: 'cell source', code: 'code', text: 'preview' };

/** One line of a unified diff, as a block span classed by what the line is. */
export function diffLine(line: string): HTMLSpanElement {
  let kind = '';
  if (line.startsWith('+++') || line.startsWith('---')) {
    kind = 'blitz-diff-file';
  } else if (line.startsWith('@@')) {
    kind = 'blitz-diff-hunk';
  } else if (line.startsWith('+')) {
    kind = 'blitz-diff-add';
  } else if (line.startsWith('-')) {
    kind = 'blitz-diff-del';
  }
  return h('span', { class: `blitz-diff-line ${kind}`.trim(), text: `${line}\n` });
}

/** The lines of a diff, its last newline dropped. */
export function diffLines(diff: string): HTMLSpanElement[] {
  return diff.replace(/\n$/, '').split('\n').map(diffLine);
}

/** A permission request's call preview: a labelled block, folded when it is long. */
export function previewNode(call: Loose<PendingCallEntry>): HTMLElement | HTMLElement[] {
  const text = call.preview || '';
  const kind = call.preview_kind || 'text';
  const lines = text.replace(/\n$/, '').split('\n');
  const code = kind === 'diff' ? h('code', {}, lines.map(diffLine)) : h('code', { text });
  const name = PREVIEW_LABEL[kind] || 'preview';
  const pre = h(
    'pre',
    { class: `blitz-code blitz-preview blitz-preview-${kind}`, 'aria-label': `${name} of ${call.name}` },
    code
  );
  const label = `${name} · ${plural(lines.length, 'line')}`;
  if (lines.length <= FOLD_LINES) {
    return [h('div', { class: 'blitz-label', text: label }), pre];
  }
  return h('details', { class: 'blitz-preview-fold' }, h('summary', { text: `${label} (folded)` }), pre);
}
