// A tool call's card: a <details> with its status, name, short arguments and elapsed time in
// the summary, and inside it the full arguments, the result or error, the images it showed and,
// for a sub-agent, that agent's own turn. The widget never tells tools apart by name: how a
// tool asks to be shown comes with its item (`presentation`, the tool's ToolPresentation).

import type { ShownImage, ToolItem, ToolPresentation } from '../../src/generated/protocol';
import type { Cards, ImageBlock, TickingCard } from './cards';
import { h } from './dom';
import { seconds, shortArgs } from './format';
import type { Item } from './items';

const TOOL_MARK: Record<string, string> = {
  queued: 'queued',
  waiting: 'waiting for approval',
  running: 'running',
  done: 'done',
  error: 'error',
  denied: 'denied',
  cancelled: 'cancelled',
  blocked: 'blocked'
};
const IMAGE_TYPE = /^image\/(png|jpeg|gif|webp)$/;

/** Renders one item of a nested turn; `prefix` keys its cards under their parent's. */
export type ItemRenderer = (item: Item, cards: Cards, prefix: string) => Node | null;

export function presentation(tool: Partial<ToolItem>): Partial<ToolPresentation> {
  return (tool.presentation || {}) as Partial<ToolPresentation>;
}

export function toolMark(tool: Partial<ToolItem>): string {
  if (tool.status === 'waiting' && presentation(tool).plan_review) {
    return 'waiting for review';
  }
  return TOOL_MARK[tool.status || ''] || String(tool.status);
}

/** Images a tool showed (run_python's figures), scaled to the card. Built once per call and
 * reused on every redraw: decoding a large data URL again at each card change would be waste.
 * Only image/* data URLs of what the kernel sent (never model text) are ever set as src. */
export function toolImages(tool: ToolItem, cards: Cards): ImageBlock | null {
  const images: ShownImage[] = cards.images[tool.id] || [];
  const omitted = tool.images_omitted || 0;
  if (!images.length && !omitted) {
    return null;
  }
  let node = cards.imageNodes.get(tool.id);
  if (!node || node.blitzCount !== images.length) {
    node = h(
      'div',
      { class: 'blitz-tool-images' },
      images
        .filter(image => IMAGE_TYPE.test(image.media_type))
        .map((image, index) =>
          h('img', {
            class: 'blitz-tool-image',
            src: `data:${image.media_type};base64,${image.data}`,
            alt: `image ${index + 1} of ${images.length} from ${tool.name}`
          })
        ),
      omitted ? h('div', { class: 'blitz-note', text: `${omitted} more image${omitted === 1 ? '' : 's'} not shown` }) : null
    ) as ImageBlock;
    node.blitzCount = images.length;
    cards.imageNodes.set(tool.id, node);
    if (images.length) {
      cards.open.add(tool.id); // shown inline: a card with images opens once
    }
  }
  return node;
}

/** A sub-agent's turn inside its invoke_agent card: its text and tool cards, nested again for
 * its own sub-agents. Call ids are unique only within one agent's turn, so cards are keyed by
 * their path ("c1/c2"). */
export function nestedTurn(tool: ToolItem, cards: Cards, key: string, renderItem: ItemRenderer): HTMLElement | null {
  if (!tool.nested || !tool.nested.length) {
    return null;
  }
  const agent = String((tool.args && tool.args.agent) || 'sub-agent');
  return h(
    'div',
    { class: 'blitz-nested', role: 'group', 'aria-label': `${agent} turn` },
    h('div', { class: 'blitz-label', text: `${agent}` }),
    tool.nested.map(item => renderItem(item, cards, `${key}/`)).filter(Boolean) as Node[]
  );
}

function resultBlock(tool: ToolItem): HTMLElement[] | null {
  if (!tool.error && !tool.preview) {
    return null;
  }
  const label = tool.status === 'blocked' ? 'blocked' : tool.error ? 'error' : 'result';
  return [
    h('div', { class: 'blitz-label', text: label }),
    h('pre', { class: 'blitz-code blitz-result' }, h('code', { text: tool.error || tool.preview }))
  ];
}

export function toolCard(tool: ToolItem, cards: Cards, renderItem: ItemRenderer, prefix = ''): TickingCard {
  const openCards = cards.open;
  const key = `${prefix}${tool.id}`;
  const images = prefix ? null : toolImages(tool, cards);
  const details: TickingCard = h('details', { class: `blitz-tool blitz-tool-${tool.status}`, 'data-tool-id': key });
  // a running sub-agent opens its card once, so its work shows as it streams
  if (presentation(tool).streams_subagent && tool.status === 'running' && !cards.seen.has(key)) {
    openCards.add(key);
  }
  cards.seen.add(key);
  if (openCards.has(key)) {
    details.open = true;
  }
  details.addEventListener('toggle', () => {
    if (details.open) {
      openCards.add(key);
    } else {
      openCards.delete(key);
    }
  });
  const elapsed = h('span', { class: 'blitz-elapsed' });
  const tick = (): void => {
    const end = tool.ended_ms || Date.now();
    elapsed.textContent = tool.status === 'queued' || tool.status === 'waiting' ? '' : seconds(end - tool.started_ms);
  };
  tick();
  details.blitzTick = tool.ended_ms ? null : tick;
  details.append(
    h(
      'summary',
      {},
      h('span', { class: 'blitz-status', text: toolMark(tool) }),
      h('span', { class: 'blitz-tool-name', text: tool.name }),
      h('span', { class: 'blitz-args', text: `(${shortArgs(tool.args)})` }),
      elapsed
    ),
    h(
      'div',
      { class: 'blitz-tool-body' },
      h('div', { class: 'blitz-label', text: 'arguments' }),
      h('pre', { class: 'blitz-code' }, h('code', { text: JSON.stringify(tool.args, null, 2) })),
      nestedTurn(tool, cards, key, renderItem),
      resultBlock(tool),
      images
    )
  );
  return details;
}
