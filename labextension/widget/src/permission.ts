// The approval card: a permission request's calls, each with why it asks, what it would change
// (diff.ts) or its arguments, and Allow once / Always allow / Deny with a reason box the
// model reads on Deny. A call already decided shows its decision instead of the buttons.

import type { PendingCallEntry, PendingView } from '../../src/generated/protocol';
import { previewNode } from './diff';
import { h } from './dom';
import type { Loose, SendTurn } from './model';

type Decision = 'allow' | 'always' | 'deny';

function callCard(call: PendingCallEntry, requestId: string, send: SendTurn): HTMLDivElement {
  const reason = h('input', {
    type: 'text',
    class: 'blitz-reason',
    placeholder: 'reason (optional, the model reads it)',
    'aria-label': `Reason for denying ${call.name} (optional)`
  });
  const decide = (decision: Decision) => (): void =>
    send({
      kind: 'decide',
      request_id: requestId,
      call_id: call.id,
      decision,
      reason: decision === 'deny' ? reason.value : null
    });
  const done = Boolean(call.decision);
  return h(
    'div',
    { class: 'blitz-call', role: 'group', 'aria-label': `${call.name} call` },
    h(
      'div',
      { class: 'blitz-call-head' },
      h('span', { class: 'blitz-tool-name', text: call.name }),
      done ? h('span', { class: 'blitz-status', text: call.decision === 'deny' ? 'denied' : 'allowed' }) : null
    ),
    call.reason ? h('div', { class: 'blitz-ask-reason', text: `why it asks: ${call.reason}` }) : null,
    call.preview
      ? previewNode(call)
      : h('pre', { class: 'blitz-code' }, h('code', { text: JSON.stringify(call.args, null, 2) })),
    done
      ? null
      : h(
          'div',
          { class: 'blitz-buttons' },
          h('button', { class: 'blitz-allow', type: 'button', onclick: decide('allow') }, 'Allow once'),
          h(
            'button',
            { type: 'button', onclick: decide('always'), title: 'Allow this tool for the rest of the session' },
            'Always allow'
          ),
          h('button', { class: 'blitz-deny', type: 'button', onclick: decide('deny') }, 'Deny'),
          reason
        )
  );
}

export function permissionCard(pending: Loose<PendingView> | null | undefined, send: SendTurn): HTMLDivElement | null {
  if (!pending || !pending.request_id) {
    return null;
  }
  const calls = pending.calls || [];
  const names = [...new Set(calls.map(call => call.name))].join(', ');
  const asker = pending.agent ? `${pending.agent} asks to run ${names}` : 'Permission needed';
  const waiting = pending.waiting || 0;
  const card = h(
    'div',
    { class: 'blitz-permission', role: 'group', 'aria-label': 'Permission request' },
    h('div', { class: 'blitz-label', text: asker }),
    waiting ? h('div', { class: 'blitz-note', text: `${waiting} more request${waiting === 1 ? '' : 's'} waiting` }) : null
  );
  for (const call of calls) {
    card.append(callCard(call, pending.request_id, send));
  }
  return card;
}
