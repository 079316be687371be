// The live turn widget (the anywidget ES module TurnView loads, built from this folder by
// `npm run build:widget`, docs/widget.md).
//
// State comes from the kernel as synced traits (TurnWidgetState); user actions go back as
// custom messages {kind, turn_id, ...} (TurnWidgetCommand). Wordings the static rendering
// shares (a plan's heading, the compaction note) arrive in the items, written by Python, so
// they are defined once. Each part of the widget is a function of its traits; `render` only
// lays out the slots and redraws a slot when its trait changes.

import { liveNodes } from './answer';
import { asideNodes, steerNodes } from './aside';
import { type Cards, newCards, type TickingCard } from './cards';
import { controls } from './controls';
import { h, present } from './dom';
import { footerText } from './footer';
import { itemNodes } from './items';
import type { RenderProps, SendTurn, TurnModel } from './model';
import { noticeNodes } from './notice';
import { offerCard } from './offer';
import { permissionCard } from './permission';
import { reviewCard } from './plan';
import { chipNodes, promptNodes } from './prompt';

export { renderMarkdown } from './markdown';

const TICK_MS = 250;

function render({ model, el }: RenderProps<TurnModel>): () => void {
  const turnId = (): string => model.get('turn_id') || '';
  const send: SendTurn = command => model.send({ ...command, turn_id: turnId() });
  // Cards keep their open/closed state and their image nodes across redraws.
  const cards: Cards = newCards();

  const prompt = h('div', { class: 'blitz-prompt' });
  const chips = h('div', { class: 'blitz-chips', role: 'list', 'aria-label': 'Attachments' });
  const body = h('div', { class: 'blitz-body', 'aria-live': 'polite' });
  const live = h('div', { class: 'blitz-live' });
  const permission = h('div', { class: 'blitz-permission-slot' });
  const reviewSlot = h('div', { class: 'blitz-review-slot' });
  const offerSlot = h('div', { class: 'blitz-offer-slot' });
  const steerLog = h('ul', { class: 'blitz-steers', 'aria-label': 'Steer messages' });
  const asideLog = h('div', { class: 'blitz-asides' });
  const notice = h('div', { class: 'blitz-note' });
  const footer = h('div', { class: 'blitz-footer' });
  const turnControls = controls(send);
  const root = h(
    'div',
    { class: 'blitz-turn' },
    prompt,
    chips,
    body,
    live,
    permission,
    reviewSlot,
    offerSlot,
    steerLog,
    asideLog,
    notice,
    turnControls.root,
    footer
  );
  el.replaceChildren(root);

  const drawHeader = (): void => {
    const header = model.get('header') || {};
    prompt.replaceChildren(...promptNodes(header));
    chips.replaceChildren(...chipNodes(header));
  };
  const drawItems = (): void => {
    cards.images = model.get('images') || {};
    body.replaceChildren(...itemNodes(model.get('items'), cards));
  };
  const drawControls = (): void => turnControls.draw(model.get('phase'), model.get('stopping'));
  const drawFooter = (): void => {
    footer.textContent = footerText(model.get('footer') || {}, model.get('header') || {}, model.get('phase'));
  };

  const draws: Record<string, () => void> = {
    header: drawHeader,
    items: drawItems,
    live: () => live.replaceChildren(...liveNodes(model.get('live') || {})),
    pending: () => permission.replaceChildren(...present(permissionCard(model.get('pending'), send))),
    review: () => reviewSlot.replaceChildren(...present(reviewCard(model.get('review'), send))),
    offer: () => offerSlot.replaceChildren(...present(offerCard(model.get('offer'), send))),
    steers: () => steerLog.replaceChildren(...steerNodes(model.get('steers'))),
    asides: () => asideLog.replaceChildren(...asideNodes(model.get('asides'))),
    phase: () => {
      drawControls();
      drawFooter();
    },
    stopping: drawControls,
    footer: drawFooter,
    notice: () => notice.replaceChildren(...noticeNodes(model.get('notice'))),
    images: drawItems
  };
  const handlers: [string, () => void][] = [];
  for (const [name, draw] of Object.entries(draws)) {
    draw();
    const handler = (): void => draw();
    model.on(`change:${name}`, handler);
    handlers.push([name, handler]);
  }
  drawControls();

  // Elapsed times tick here, in the browser: the kernel sends no message for them.
  const timer = setInterval(() => {
    for (const card of Array.from(body.querySelectorAll<TickingCard>('details.blitz-tool'))) {
      if (card.blitzTick) {
        card.blitzTick();
      }
    }
    if (model.get('phase') !== 'done') {
      drawFooter();
    }
  }, TICK_MS);

  send({ kind: 'ready' });
  return () => {
    clearInterval(timer);
    for (const [name, handler] of handlers) {
      model.off(`change:${name}`, handler);
    }
  };
}

export default { render };
