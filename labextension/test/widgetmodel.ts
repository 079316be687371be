/**
 * A stand-in for anywidget's model in memory: traits you can set (each set fires its
 * `change:` handlers, as anywidget's model does), and the commands the view sent. Also full,
 * typed states of the turn widget as the kernel first syncs them, for tests to change.
 */

import type {
  Footer,
  Header,
  ToolItem,
  TurnWidgetState,
  UndoWidgetState
} from '../src/generated/protocol';

export class MemoryModel<State extends object> {
  sent: unknown[] = [];
  saved = 0;
  private handlers = new Map<string, Set<() => void>>();

  constructor(public state: State) {}

  get<K extends keyof State>(name: K): State[K] | undefined {
    return this.state[name];
  }

  set<K extends keyof State>(name: K, value: State[K]): void {
    this.state[name] = value;
    for (const handler of this.handlers.get(`change:${String(name)}`) || []) {
      handler();
    }
  }

  save_changes(): void {
    this.saved += 1;
  }

  on(event: string, handler: () => void): void {
    if (!this.handlers.has(event)) {
      this.handlers.set(event, new Set());
    }
    this.handlers.get(event)!.add(handler);
  }

  off(event: string, handler: () => void): void {
    this.handlers.get(event)?.delete(handler);
  }

  send(message: unknown): void {
    this.sent.push(message);
  }

  /** How many handlers are subscribed (the view's clean-up removes them all). */
  subscribed(): number {
    return [...this.handlers.values()].reduce((count, set) => count + set.size, 0);
  }
}

export const HEADER: Header = {
  prompt: 'Summarise sales.csv',
  label: '',
  session: 'default',
  model: 'openai/fake-model',
  agent: '',
  turn_index: 0,
  started_ms: 1_000,
  attachments: []
};

export const FOOTER: Footer = {
  model: '',
  input_tokens: 0,
  output_tokens: 0,
  cached_tokens: 0,
  calls: 0,
  cost: '',
  priced: false,
  elapsed_s: null,
  stop_reason: '',
  progress: '',
  switches: [],
  context: '',
  saving: ''
};

export function turnState(overrides: Partial<TurnWidgetState> = {}): TurnWidgetState {
  return {
    turn_id: 't1',
    header: HEADER,
    items: [],
    live: { text: '', thought: '' },
    pending: {},
    review: {},
    offer: {},
    steers: [],
    asides: [],
    footer: FOOTER,
    phase: 'running',
    stopping: '',
    notice: '',
    images: {},
    ...overrides
  };
}

export function tool(overrides: Partial<ToolItem> = {}): ToolItem {
  return {
    kind: 'tool',
    id: 'c1',
    name: 'read_file',
    args: { path: 'sales.csv' },
    presentation: {},
    status: 'running',
    started_ms: 1_000,
    ended_ms: null,
    preview: '',
    error: null,
    decision: null,
    images: 0,
    images_omitted: 0,
    agent: '',
    nested: [],
    ...overrides
  };
}

export function undoState(overrides: Partial<UndoWidgetState> = {}): UndoWidgetState {
  return { turn_id: 't1', status: 'ready', report: '', changes: [], panel: false, ...overrides };
}

/** Presses a key in a box, as the browser dispatches it. */
export function press(target: HTMLElement, key: string, init: KeyboardEventInit = {}): KeyboardEvent {
  const event = new KeyboardEvent('keydown', { key, bubbles: true, cancelable: true, ...init });
  target.dispatchEvent(event);
  return event;
}

/** The first element under `root` that matches (an error naming the selector when none does). */
export function first(root: ParentNode, selector: string): HTMLElement {
  const node = root.querySelector<HTMLElement>(selector);
  if (!node) {
    throw new Error(`nothing matches ${selector}`);
  }
  return node;
}

/** Every element under `root` that matches, in document order. */
export function every(root: ParentNode, selector: string): HTMLElement[] {
  return Array.from(root.querySelectorAll<HTMLElement>(selector));
}
