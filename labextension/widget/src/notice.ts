// Notices about the turn (an untrusted workspace, an unpriced model, a session not saved), one
// a line.

import { h } from './dom';

export function noticeNodes(notice: string | undefined): HTMLDivElement[] {
  const lines = (notice || '').split('\n').filter(Boolean);
  return lines.map(line => h('div', { class: 'blitz-notice', role: 'note', text: `⚠ ${line}` }));
}
