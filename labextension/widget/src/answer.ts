// The answer as it streams in: the step's thinking (folded) and its text, as Markdown. Once a
// step ends its text moves into the items.

import type { Live } from '../../src/generated/protocol';
import { h } from './dom';
import { renderMarkdown } from './markdown';
import type { Loose } from './model';

export function liveNodes(state: Loose<Live>): HTMLElement[] {
  const parts: HTMLElement[] = [];
  if (state.thought) {
    parts.push(h('details', { class: 'blitz-thought' }, h('summary', { text: 'Thinking…' }), renderMarkdown(state.thought)));
  }
  if (state.text) {
    parts.push(renderMarkdown(state.text));
  }
  return parts;
}
