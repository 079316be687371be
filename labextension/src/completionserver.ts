/**
 * The inline completion provider's JupyterLab side: its client of the server extension's
 * `/blitz/completion` endpoint (through `ServerConnection`, so with the server's token and
 * XSRF cookie like every other request) and what a notebook panel says about the cursor's cell.
 */

import { NotebookPanel } from '@jupyterlab/notebook';
import { ServerConnection } from '@jupyterlab/services';
import type { Widget } from '@lumino/widgets';

import {
  type CellSurroundings,
  type CompletionChunk,
  type CompletionClient,
  type CompletionRequestBody,
  type CompletionSettings,
  ndjson,
  neighbours
} from './completion';

export class ServerCompletionClient implements CompletionClient {
  constructor(private readonly server: ServerConnection.ISettings) {}

  private get url(): string {
    return `${this.server.baseUrl.replace(/\/?$/, '/')}blitz/completion`;
  }

  async settings(path: string): Promise<CompletionSettings> {
    const reply = await ServerConnection.makeRequest(
      `${this.url}?path=${encodeURIComponent(path)}`,
      { method: 'GET' },
      this.server
    );
    if (!reply.ok) {
      return { enabled: false, model: null, debounce_ms: 0, max_tokens: 0, reason: `the server answered ${reply.status}` };
    }
    return (await reply.json()) as CompletionSettings;
  }

  async *stream(body: CompletionRequestBody, signal: AbortSignal): AsyncGenerator<CompletionChunk> {
    const reply = await ServerConnection.makeRequest(
      this.url,
      { method: 'POST', body: JSON.stringify(body), signal },
      this.server
    );
    if (!reply.ok || reply.body === null) {
      yield { kind: 'error', message: `the completion request failed (${reply.status} ${reply.statusText})` };
      return;
    }
    yield* ndjson(reply.body);
  }
}

/** The notebook's path, the cell's language and its neighbours; null outside a notebook. */
export function notebookSurroundings(widget: Widget): CellSurroundings | null {
  if (!(widget instanceof NotebookPanel)) {
    return null;
  }
  const notebook = widget.content;
  const cells = notebook.widgets;
  const active = notebook.activeCellIndex;
  if (active < 0 || active >= cells.length || cells[active].model.type !== 'code') {
    return null;
  }
  const sources = cells.map(cell => (cell.model.type === 'code' ? cell.model.sharedModel.getSource() : ''));
  const language = String(widget.model?.metadata?.language_info?.name ?? 'python');
  return { path: widget.context.path, language, ...neighbours(sources, active) };
}
