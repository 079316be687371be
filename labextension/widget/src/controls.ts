// The controls of a running turn: Steer the agent and Ask aside (Enter sends, Shift+Enter does
// not; an empty box sends nothing) and Stop (once: after this step; twice: now). They are
// disabled when the turn is not running and hidden once it is done.

import type { TurnWidgetState } from '../../src/generated/protocol';
import { h } from './dom';
import type { SendTurn, TurnCommand } from './model';

export interface Controls {
  root: HTMLDivElement;
  draw(phase: TurnWidgetState['phase'] | undefined, stopping: TurnWidgetState['stopping'] | undefined): void;
}

function sendOnEnter(box: HTMLInputElement, send: SendTurn, build: (value: string) => TurnCommand): void {
  box.addEventListener('keydown', event => {
    if (event.key !== 'Enter' || event.shiftKey || event.isComposing) {
      return;
    }
    event.preventDefault();
    const value = box.value.trim();
    if (!value) {
      return;
    }
    send(build(value));
    box.value = '';
  });
}

export function controls(send: SendTurn): Controls {
  const steerBox = h('input', {
    type: 'text',
    class: 'blitz-steer',
    'aria-label': 'Steer the agent',
    placeholder: 'Steer the agent (Enter sends)'
  });
  const asideBox = h('input', {
    type: 'text',
    class: 'blitz-aside',
    'aria-label': 'Ask aside',
    placeholder: 'Ask aside: a side question, not recorded (Enter sends)'
  });
  const stopButton = h(
    'button',
    { type: 'button', class: 'blitz-stop', title: 'Stop after this step; press again to stop now' },
    'Stop'
  );
  const stopHint = h('span', { class: 'blitz-hint' });
  sendOnEnter(steerBox, send, text => ({ kind: 'steer', text }));
  sendOnEnter(asideBox, send, question => ({ kind: 'aside', question }));
  stopButton.addEventListener('click', () => send({ kind: 'stop' }));
  const root = h('div', { class: 'blitz-controls' }, steerBox, asideBox, stopButton, stopHint);
  return {
    root,
    draw(phase, stopping) {
      const running = phase === 'running';
      steerBox.disabled = !running;
      asideBox.disabled = !running;
      stopButton.disabled = phase === 'done' || stopping === 'force';
      stopHint.textContent =
        stopping === 'graceful'
          ? 'stopping after this step; press Stop again to stop now'
          : stopping === 'force'
            ? 'stopping now'
            : '';
      root.hidden = phase === 'done';
    }
  };
}
