/**
 * The names and types of the user's variables for "Blitz" inline completion
 * (docs/completion.md), asked of the kernel only while it is idle.
 *
 * The kernel answers on a comm `blitz.variables` (blitz_kernel/notebook/variables_comm.py),
 * reading only each object's type, so no user code runs. A busy kernel is never asked and never
 * waited for: the suggestion goes without variables. An answer is kept per kernel until the
 * kernel starts running code again (each execution may define new names); a slow one is waited
 * for only `waitMs`, and is still kept when it comes.
 *
 * Free of JupyterLab runtime imports (types only) so that it is unit-tested on plain data.
 */

import type { UserVariable } from './generated/protocol';

export type { UserVariable };

/** As many as the server takes (server/completion.py), and as long. */
export const MAX_VARIABLES = 100;
export const MAX_NAME_CHARS = 100;
/** How long a suggestion waits for an idle kernel's answer before it goes without. */
export const WAIT_MS = 300;

/** What the cache needs of a kernel (the real connection's adapter, or a test's). */
export interface VariableKernel {
  /** The kernel's status as the front end knows it ('idle', 'busy', …). */
  readonly status: string;
  /** One round trip to the kernel: its reply's data, or null when it did not answer. */
  request(): Promise<unknown>;
  /** Call `listener` each time the kernel starts running code (or restarts). */
  onExecution(listener: () => void): void;
}

/** The reply's variables, capped; anything malformed is dropped (an empty list at worst). */
export function readVariables(data: unknown): UserVariable[] {
  const reply = data as { kind?: unknown; variables?: unknown } | null;
  if (reply === null || typeof reply !== 'object' || reply.kind !== 'variables' || !Array.isArray(reply.variables)) {
    return [];
  }
  const found: UserVariable[] = [];
  for (const item of reply.variables as { name?: unknown; type?: unknown }[]) {
    if (item && typeof item.name === 'string' && typeof item.type === 'string' && item.name.length > 0) {
      if (item.name.length <= MAX_NAME_CHARS) {
        found.push({ name: item.name, type: item.type.slice(0, MAX_NAME_CHARS) });
      }
    }
  }
  return found.slice(-MAX_VARIABLES);
}

export class VariableCache {
  private readonly known = new WeakMap<VariableKernel, { answer: Promise<UserVariable[]> | null }>();

  constructor(private readonly waitMs = WAIT_MS) {}

  /** The kernel's variables: kept, asked now (the kernel is idle), or none (it is busy). */
  variables(kernel: VariableKernel | null): Promise<UserVariable[]> {
    if (kernel === null) {
      return Promise.resolve([]);
    }
    let entry = this.known.get(kernel);
    if (entry === undefined) {
      const created: { answer: Promise<UserVariable[]> | null } = { answer: null };
      kernel.onExecution(() => (created.answer = null)); // new code ran: the names may have changed
      this.known.set(kernel, created);
      entry = created;
    }
    if (entry.answer === null) {
      if (kernel.status !== 'idle') {
        return Promise.resolve([]); // busy: skip, never wait
      }
      entry.answer = kernel.request().then(readVariables, () => []);
    }
    return withinMs(entry.answer, this.waitMs);
  }
}

function withinMs(answer: Promise<UserVariable[]>, ms: number): Promise<UserVariable[]> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<UserVariable[]>(resolve => (timer = setTimeout(() => resolve([]), ms)));
  return Promise.race([answer, late]).finally(() => clearTimeout(timer));
}
