// The turn's body: each item (text, thinking, a tool call, a plan, a compaction note, the
// error that stopped the turn) as its block, in order.

import type { TurnWidgetState } from '../../src/generated/protocol';
import type { Cards } from './cards';
import { h } from './dom';
import { renderMarkdown } from './markdown';
import { planItem } from './plan';
import { presentation, toolCard } from './tool';

export type Item = TurnWidgetState['items'][number];

export function itemNode(item: Item, cards: Cards, prefix = ''): Node | null {
  switch (item.kind) {
    case 'text':
      return renderMarkdown(item.text);
    case 'thought':
      return h('details', { class: 'blitz-thought' }, h('summary', { text: 'Thinking' }), renderMarkdown(item.text));
    case 'tool':
      // a plan that was answered shows as the plan item that follows
      if (presentation(item).plan_review && item.status === 'done') {
        return null;
      }
      return toolCard(item, cards, itemNode, prefix);
    case 'plan':
      return planItem(item);
    case 'compaction':
      return h('div', { class: 'blitz-note', text: item.line });
    case 'error':
      return h('div', { class: 'blitz-error', role: 'alert', text: `Stopped: ${item.message}` });
    default:
      return null;
  }
}

/** The body's nodes for the turn's items. */
export function itemNodes(items: Item[] | undefined, cards: Cards): Node[] {
  return (items || []).map(item => itemNode(item, cards)).filter((node): node is Node => node !== null);
}
