// What the user said to the running turn: steer messages with what became of each, and side
// questions ("btw") with their answers, which are not recorded.

import type { AsideEntry, SteerEntry } from '../../src/generated/protocol';
import { h } from './dom';
import { renderMarkdown } from './markdown';

const STEER_WORDS: Record<string, string> = {
  queued: 'queued: rides on the next tool result',
  delivered: 'delivered',
  next_prompt: 'sent as the next prompt',
  dropped: 'dropped'
};

export function steerNodes(steers: SteerEntry[] | undefined): HTMLLIElement[] {
  return (steers || []).map(steer =>
    h(
      'li',
      { class: `blitz-steer-${steer.status}` },
      h('span', { text: `↪ ${steer.text}` }),
      h('span', {
        class: 'blitz-status',
        text: ` ${STEER_WORDS[steer.status] || steer.status} ${steer.detail || ''}`.trimEnd()
      })
    )
  );
}

export function asideNodes(asides: AsideEntry[] | undefined): HTMLDivElement[] {
  return (asides || []).map(aside =>
    h(
      'div',
      { class: 'blitz-aside-entry', role: 'note' },
      h('div', { class: 'blitz-label', text: 'Aside (not recorded)' }),
      h('div', { class: 'blitz-aside-question', text: aside.question }),
      aside.answer ? renderMarkdown(aside.answer) : null,
      aside.status === 'thinking' && !aside.answer ? h('div', { class: 'blitz-note', text: 'thinking…' }) : null,
      aside.error ? h('div', { class: aside.status === 'cancelled' ? 'blitz-note' : 'blitz-error', text: aside.error }) : null
    )
  );
}
