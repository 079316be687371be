// @vitest-environment happy-dom
/**
 * The Undo this turn button (labextension/widgets/undo.ts) rendered with a DOM and a model
 * of its generated state, no kernel and no browser: what each status shows, what a click
 * sends, and that a status it does not know is logged once and shown as the first state.
 */

import { describe, expect, it, vi } from 'vitest';

import type { UndoMessage, UndoWidgetState } from '../src/generated/protocol';
import type { WidgetModel } from '../widgets/anywidget';
import { DROPPED, render } from '../widgets/undo';

class FakeModel implements WidgetModel<UndoWidgetState, UndoMessage> {
  sent: UndoMessage[] = [];
  private readonly listeners = new Map<string, Set<() => void>>();

  constructor(private state: UndoWidgetState) {}

  get<K extends keyof UndoWidgetState>(name: K): UndoWidgetState[K] {
    return this.state[name];
  }

  on(event: string, callback: () => void): void {
    this.listeners.set(event, (this.listeners.get(event) ?? new Set()).add(callback));
  }

  off(event: string, callback: () => void): void {
    this.listeners.get(event)?.delete(callback);
  }

  send(content: UndoMessage): void {
    this.sent.push(content);
  }

  /** The kernel changed traits (one comm message). */
  set(changes: Partial<UndoWidgetState>): void {
    this.state = { ...this.state, ...changes };
    for (const name of Object.keys(changes)) {
      this.listeners.get(`change:${name}`)?.forEach(callback => callback());
    }
  }

  listening(): number {
    return [...this.listeners.values()].reduce((count, callbacks) => count + callbacks.size, 0);
  }
}

function shown(model: FakeModel) {
  const el = document.createElement('div');
  const cleanup = render({ model, el });
  const button = el.querySelector('button.blitz-undo-button') as HTMLButtonElement;
  const report = el.querySelector('.blitz-undo-report') as HTMLElement;
  const root = el.querySelector('.blitz-undo') as HTMLElement;
  return { el, cleanup, button, report, root };
}

describe('the Undo this turn button', () => {
  it('sends one undo for its turn when clicked, and shows each status the kernel sets', () => {
    const model = new FakeModel({ turn_id: 't1', status: 'ready', report: '' });
    const { button, report, root } = shown(model);
    expect([button.textContent, button.disabled, report.hidden, root.dataset.status]).toEqual([
      'Undo this turn',
      false,
      true,
      'ready'
    ]);
    expect(report.getAttribute('role')).toBe('status');
    button.click();
    expect(model.sent).toEqual([{ kind: 'undo', turn_id: 't1' }]);

    model.set({ status: 'running' });
    expect([button.textContent, button.disabled]).toEqual(['Undoing…', true]);
    button.click(); // disabled: nothing more is sent
    expect(model.sent).toHaveLength(1);

    model.set({ status: 'done', report: 'restored a.txt\nrestored cell 3' });
    expect([button.textContent, button.disabled, report.hidden]).toEqual(['Undone', true, false]);
    expect(report.textContent).toBe('restored a.txt\nrestored cell 3');
  });

  it('can be pressed again after it was blocked or failed, and shows the reason', () => {
    const model = new FakeModel({ turn_id: 't2', status: 'blocked', report: 'undo the later turns first' });
    const { button, report } = shown(model);
    expect([button.textContent, button.disabled, report.textContent]).toEqual([
      'Undo this turn',
      false,
      'undo the later turns first'
    ]);
    model.set({ status: 'failed', report: 'no checkpoint' });
    button.click();
    expect(model.sent).toEqual([{ kind: 'undo', turn_id: 't2' }]);
  });

  it('shows the report as text, never as HTML', () => {
    const model = new FakeModel({ turn_id: 't3', status: 'done', report: '<img src=x onerror=alert(1)>' });
    const { report } = shown(model);
    expect(report.querySelector('img')).toBeNull();
    expect(report.textContent).toBe('<img src=x onerror=alert(1)>');
  });

  it('logs a status it does not know once and shows the first state', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const model = new FakeModel({ turn_id: 't4', status: 'ready', report: '' });
    const { button, root } = shown(model);
    model.set({ status: 'exploded' as UndoWidgetState['status'] });
    model.set({ status: 'melted' as UndoWidgetState['status'] });
    expect([button.textContent, button.disabled, root.dataset.status]).toEqual(['Undo this turn', false, 'ready']);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0][0]).toContain('the Undo this turn button ignored a status message it cannot use');
    expect(DROPPED.drop({ kind: 'status' }, 'again')).toBe(false);
    warn.mockRestore();
  });

  it('stops listening when the view goes', () => {
    const model = new FakeModel({ turn_id: 't5', status: 'ready', report: '' });
    const { cleanup } = shown(model);
    expect(model.listening()).toBe(2);
    cleanup();
    expect(model.listening()).toBe(0);
  });
});
