// Plans: a plan the turn proposed and what became of it (an item of the body), and the card
// of a plan that waits for the user (Approve plan / Reject with a reason the model reads).

import type { PlanItem, Review } from '../../src/generated/protocol';
import { h } from './dom';
import { renderMarkdown } from './markdown';
import type { Loose, SendTurn } from './model';

export function planItem(item: PlanItem): HTMLDivElement {
  return h(
    'div',
    { class: `blitz-plan blitz-plan-${item.status}` },
    h('div', { class: 'blitz-label', text: item.heading }),
    item.status === 'rejected' ? h('div', { class: 'blitz-plan-reason', text: item.reason || 'no reason given' }) : null,
    renderMarkdown(item.plan)
  );
}

/** The plan waits for the user; the reason box is read by the model on Reject, and Enter in
 * it (with a reason typed) rejects. Either button disables both. */
export function reviewCard(review: Loose<Review> | null | undefined, send: SendTurn): HTMLDivElement | null {
  if (!review || !review.review_id) {
    return null;
  }
  const reviewId = review.review_id;
  const reason = h('input', {
    type: 'text',
    class: 'blitz-reason',
    placeholder: 'what to change (optional, the model reads it)',
    'aria-label': 'Reason for rejecting'
  });
  const buttons: HTMLButtonElement[] = [];
  const answer = (approved: boolean) => (): void => {
    for (const button of buttons) {
      button.disabled = true;
    }
    send({ kind: 'review', review_id: reviewId, approved, reason: approved ? null : reason.value });
  };
  buttons.push(
    h('button', { class: 'blitz-allow', type: 'button', onclick: answer(true) }, 'Approve plan'),
    h('button', { class: 'blitz-deny', type: 'button', onclick: answer(false) }, 'Reject')
  );
  reason.addEventListener('keydown', event => {
    if (event.key !== 'Enter' || event.isComposing || !reason.value.trim()) {
      return;
    }
    event.preventDefault();
    answer(false)();
  });
  return h(
    'div',
    { class: 'blitz-review', role: 'group', 'aria-label': 'Plan review' },
    h('div', { class: 'blitz-label', text: 'Proposed plan — approve it to carry it out' }),
    renderMarkdown(review.plan),
    h('div', { class: 'blitz-buttons' }, buttons, reason)
  );
}
