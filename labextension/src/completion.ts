/**
 * "Blitz" inline completion (docs/completion.md): ghost text in code cells from the
 * workspace's `completion.model`, served by this package's Jupyter server extension so a
 * suggestion comes while the kernel is busy running a turn.
 *
 * The provider waits `debounce_ms` after the last keystroke, then asks the server once and
 * streams the answer into the ghost text. A keystroke in the meantime supersedes the request:
 * a waiting one is dropped before anything is sent, a running one is aborted, which closes the
 * HTTP request and so cancels the model call on the server. The names and types of the user's
 * variables go along when the kernel is idle (variables.ts); they are asked for during the
 * debounce, so an idle kernel's answer costs no extra wait.
 *
 * Free of JupyterLab runtime imports (types only) so that it is unit-tested on plain data.
 */

import type {
  CompletionHandler,
  IInlineCompletionContext,
  IInlineCompletionItem,
  IInlineCompletionList,
  IInlineCompletionProvider
} from '@jupyterlab/completer';
import type { Widget } from '@lumino/widgets';

import type { CompletionChunk, CompletionRequest, CompletionSettings } from './generated/protocol';
import type { UserVariable } from './variables';

/**
 * `GET /blitz/completion?path=…`: the workspace's settings; `POST /blitz/completion`'s body;
 * one NDJSON line of the answer. Generated from server/completion.py's models (docs/widget.md).
 */
export type { CompletionChunk, CompletionSettings };
export type CompletionRequestBody = CompletionRequest;

/** How the provider reaches the server (the real one, or a test's). */
export interface CompletionClient {
  settings(path: string): Promise<CompletionSettings>;
  stream(body: CompletionRequestBody, signal: AbortSignal): AsyncIterable<CompletionChunk>;
}

/** Where the cursor's cell sits: its notebook's path and the neighbouring cells' sources. */
export interface CellSurroundings {
  path: string;
  language: string;
  before: string[];
  after: string[];
}

export type SurroundingsOf = (widget: Widget) => CellSurroundings | null;

/** The names and types of the user's variables in the widget's kernel; none while it is busy. */
export type VariablesOf = (widget: Widget) => Promise<UserVariable[]>;

const NEIGHBOURS = 8;
const SETTINGS_TTL_MS = 10_000;

/** The nearest `NEIGHBOURS` cells each side, as the server wants them (above: nearest last). */
export function neighbours(sources: string[], active: number): { before: string[]; after: string[] } {
  return {
    before: sources.slice(Math.max(0, active - NEIGHBOURS), active),
    after: sources.slice(active + 1, active + 1 + NEIGHBOURS)
  };
}

/** Newline-delimited JSON from a byte stream, one object per complete line. */
export async function* ndjson(body: ReadableStream<Uint8Array>): AsyncGenerator<CompletionChunk> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffered = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      buffered += done ? decoder.decode() : decoder.decode(value, { stream: true });
      let newline = buffered.indexOf('\n');
      while (newline >= 0) {
        const line = buffered.slice(0, newline).trim();
        buffered = buffered.slice(newline + 1);
        if (line) {
          yield JSON.parse(line) as CompletionChunk;
        }
        newline = buffered.indexOf('\n');
      }
      if (done) {
        if (buffered.trim()) {
          yield JSON.parse(buffered) as CompletionChunk;
        }
        return;
      }
    }
  } finally {
    reader.releaseLock();
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, ms));
}

export class BlitzInlineProvider implements IInlineCompletionProvider {
  readonly identifier = 'blitz-kernel:completion';
  readonly name = 'Blitz';

  constructor(
    private readonly client: CompletionClient,
    private readonly surroundingsOf: SurroundingsOf,
    private readonly variablesOf: VariablesOf = async () => []
  ) {}

  /** Requests started so far; a request is current while no later one has started. */
  private latest = 0;
  private running: AbortController | null = null;
  /** Each started answer with its first chunk already asked for (the request is on its way). */
  private readonly streams = new Map<
    string,
    { chunks: AsyncIterator<CompletionChunk>; first: Promise<IteratorResult<CompletionChunk>> }
  >();
  private readonly settingsCache = new Map<string, { at: number; settings: Promise<CompletionSettings> }>();

  async fetch(
    request: CompletionHandler.IRequest,
    context: IInlineCompletionContext
  ): Promise<IInlineCompletionList<IInlineCompletionItem>> {
    const ticket = ++this.latest;
    this.running?.abort(); // the user typed on: the previous suggestion is stale
    this.running = null;
    const where = this.surroundingsOf(context.widget);
    if (where === null) {
      return { items: [] };
    }
    const settings = await this.settings(where.path);
    if (!settings.enabled) {
      return { items: [] };
    }
    const variables = this.variablesOf(context.widget).catch((): UserVariable[] => []); // asked during the debounce
    await sleep(settings.debounce_ms);
    const known = await variables;
    if (ticket !== this.latest) {
      return { items: [] }; // superseded while waiting: nothing was sent
    }
    const controller = new AbortController();
    this.running = controller;
    const body: CompletionRequestBody = {
      path: where.path,
      prefix: request.text.slice(0, request.offset),
      suffix: request.text.slice(request.offset),
      language: where.language,
      before: where.before,
      after: where.after,
      variables: known
    };
    const token = `blitz-${ticket}`;
    const chunks = this.client.stream(body, controller.signal)[Symbol.asyncIterator]();
    const first = chunks.next();
    first.catch(() => undefined); // read (and reported) by stream(); never an unhandled rejection
    this.streams.set(token, { chunks, first });
    return { items: [{ insertText: '', isIncomplete: true, token }] };
  }

  async *stream(token: string): AsyncGenerator<{ response: IInlineCompletionItem }> {
    const started = this.streams.get(token);
    this.streams.delete(token);
    if (started === undefined) {
      return;
    }
    let text = '';
    let pending: Promise<IteratorResult<CompletionChunk>> | null = started.first;
    try {
      for (;;) {
        const next = await (pending ?? started.chunks.next());
        pending = null;
        if (next.done) {
          return;
        }
        const chunk = next.value;
        if (chunk.kind === 'error') {
          yield { response: { insertText: text, error: { message: chunk.message ?? 'completion failed' } } };
          return;
        }
        text = chunk.text ?? text;
        yield { response: { insertText: text, isIncomplete: chunk.kind !== 'done' } };
        if (chunk.kind === 'done') {
          return;
        }
      }
    } catch (error) {
      if ((error as { name?: string }).name !== 'AbortError') {
        yield { response: { insertText: text, error: { message: String(error) } } };
      }
    }
  }

  private settings(path: string): Promise<CompletionSettings> {
    const cached = this.settingsCache.get(path);
    const now = Date.now();
    if (cached !== undefined && now - cached.at < SETTINGS_TTL_MS) {
      return cached.settings;
    }
    const settings = this.client.settings(path).catch(
      (): CompletionSettings => ({ enabled: false, model: null, debounce_ms: 0, max_tokens: 0, reason: 'the server did not answer' })
    );
    this.settingsCache.set(path, { at: now, settings });
    return settings;
  }
}
