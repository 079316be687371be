// The turn stopped at its step limit: Continue runs more steps in the same turn, End turn ends
// it. Either button disables both.

import type { Offer } from '../../src/generated/protocol';
import { h } from './dom';
import type { Loose, SendTurn } from './model';

export function offerCard(offer: Loose<Offer> | null | undefined, send: SendTurn): HTMLDivElement | null {
  if (!offer || !offer.offer_id) {
    return null;
  }
  const offerId = offer.offer_id;
  const buttons: HTMLButtonElement[] = [];
  const answer = (go: boolean) => (): void => {
    for (const button of buttons) {
      button.disabled = true;
    }
    send({ kind: 'continue', offer_id: offerId, go });
  };
  buttons.push(
    h('button', { class: 'blitz-allow', type: 'button', onclick: answer(true) }, 'Continue'),
    h('button', { type: 'button', onclick: answer(false) }, 'End turn')
  );
  return h(
    'div',
    { class: 'blitz-offer', role: 'group', 'aria-label': 'Step limit reached' },
    h('div', { class: 'blitz-note', text: offer.line }),
    h('div', { class: 'blitz-buttons' }, buttons)
  );
}
