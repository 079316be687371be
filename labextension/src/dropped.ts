/**
 * Messages this front end ignores because they do not fit the protocol: the first of each
 * kind is logged (to the browser's console), the rest are dropped silently. A kernel of another
 * version that keeps sending a message this front end does not know must neither break the
 * notebook nor flood the console (docs/widget.md).
 */

export type Log = (message: string) => void;

export class Dropped {
  private readonly seen = new Set<string>();

  constructor(
    private readonly receiver: string,
    private readonly log: Log = message => console.warn(message)
  ) {}

  /** Note that `data` was ignored; true when this was logged (the first of its kind). */
  drop(data: unknown, problem: string): boolean {
    const kind = kindOf(data);
    if (this.seen.has(kind)) {
      return false;
    }
    this.seen.add(kind);
    this.log(`${this.receiver} ignored a ${kind} message it cannot use (${problem}); further ones of this kind are ignored silently`);
    return true;
  }
}

/** What a message says it is: its `kind`, or what it is when it has none. */
export function kindOf(data: unknown): string {
  if (typeof data === 'object' && data !== null && !Array.isArray(data)) {
    const kind = (data as Record<string, unknown>).kind;
    return typeof kind === 'string' ? kind : '(no kind)';
  }
  return `(${data === null ? 'null' : Array.isArray(data) ? 'list' : typeof data})`;
}
