/**
 * The inline completion provider's JupyterLab side: its client of the server extension's
 * `/blitz/completion` endpoint (through `ServerConnection`, so with the server's token and
 * XSRF cookie like every other request), what a notebook panel says about the cursor's cell,
 * and its kernel's variables through the comm `blitz.variables` (variables.ts).
 */

import { NotebookPanel } from '@jupyterlab/notebook';
import { type Kernel, type KernelMessage, ServerConnection } from '@jupyterlab/services';
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
import { type UserVariable, VariableCache, type VariableKernel } from './variables';

/** The comm the kernel answers with its variables' names and types (notebook/variables_comm.py). */
export const VARIABLES_TARGET = 'blitz.variables';
/** How long an unanswered comm is kept open; its answer is kept by the cache for when it comes. */
const VARIABLES_REQUEST_MS = 5_000;
const RESTARTED = new Set<Kernel.Status>(['restarting', 'autorestarting', 'dead']);

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

/** A kernel connection as variables.ts sees it: its status, one comm round trip, executions. */
class PanelKernel implements VariableKernel {
  /** The execution running now (by its request's id), whatever the last status message said. */
  private running: string | null = null;

  constructor(private readonly kernel: Kernel.IKernelConnection) {
    kernel.iopubMessage.connect(this.track, this);
    kernel.statusChanged.connect((_: unknown, status: Kernel.Status) => {
      if (RESTARTED.has(status)) {
        this.running = null; // the cell died with the kernel
      }
    });
  }

  /**
   * Busy while a cell runs: the kernel's status alone is not enough, since a request on the
   * control channel (the debugger's) is answered during a cell with an 'idle' of its own.
   */
  get status(): string {
    return this.running !== null ? 'busy' : this.kernel.status;
  }

  private track(_: unknown, msg: KernelMessage.IIOPubMessage): void {
    const parent = (msg.parent_header as { msg_id?: string }).msg_id ?? null;
    if (msg.header.msg_type === 'execute_input') {
      this.running = parent;
    } else if (msg.header.msg_type === 'status' && parent === this.running) {
      const state = (msg.content as { execution_state?: string }).execution_state;
      if (state === 'idle' || state === 'dead') {
        this.running = null;
      }
    }
  }

  request(): Promise<unknown> {
    return new Promise(resolve => {
      if (this.kernel.isDisposed) {
        resolve(null);
        return;
      }
      const comm = this.kernel.createComm(VARIABLES_TARGET);
      // the kernel closes the comm after its answer; one without blitz_kernel closes it unanswered
      const timer = setTimeout(() => {
        resolve(null);
        if (!comm.isDisposed) {
          comm.dispose();
        }
      }, VARIABLES_REQUEST_MS);
      comm.onMsg = msg => {
        clearTimeout(timer);
        resolve(msg.content.data);
      };
      comm.onClose = () => {
        clearTimeout(timer);
        resolve(null);
      };
      comm.open({ kind: 'list' });
    });
  }

  onExecution(listener: () => void): void {
    this.kernel.iopubMessage.connect((_: unknown, msg: KernelMessage.IIOPubMessage) => {
      if (msg.header.msg_type === 'execute_input') {
        listener();
      }
    });
    this.kernel.statusChanged.connect((_: unknown, status: Kernel.Status) => {
      if (RESTARTED.has(status)) {
        listener();
      }
    });
  }
}

const kernels = new WeakMap<Kernel.IKernelConnection, PanelKernel>();
const variableCache = new VariableCache();

/** The names and types of the variables in a notebook panel's kernel; none while it is busy. */
export function panelVariables(widget: Widget): Promise<UserVariable[]> {
  const kernel = widget instanceof NotebookPanel ? (widget.sessionContext.session?.kernel ?? null) : null;
  if (kernel === null) {
    return Promise.resolve([]);
  }
  let adapter = kernels.get(kernel);
  if (adapter === undefined) {
    adapter = new PanelKernel(kernel);
    kernels.set(kernel, adapter);
  }
  return variableCache.variables(adapter);
}
