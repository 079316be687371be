/**
 * The front end's half of the notebook bridge protocol (version 1), free of JupyterLab
 * imports so that it can be unit-tested on plain data.
 *
 * The kernel sends `{kind: "request", id, op, params}` over the comm `blitz.notebook`; every
 * request gets exactly one `{kind: "reply", id, ok: true, result}` or
 * `{kind: "reply", id, ok: false, error: {code, message}}`. The shapes of each op's params
 * and result are documented in blitz_kernel/notebook/bridge.py, which is the other half, and
 * typed in messages.ts (from types generated from the Python models). Errors are always replies: a request the front end cannot handle must
 * not leave the kernel waiting for its timeout, and a reply that does not fit its op's shape
 * is sent as an `internal` error saying what is wrong rather than as a result the kernel
 * would refuse.
 */

import {
  type AskPermissionParams,
  type AskPermissionResult,
  type CellRecord,
  type CellSummary,
  type CellType,
  type ErrorCode,
  type ImageInfo,
  type OpResult,
  type OutputRecord,
  type Reply,
  type Request,
  replyProblem,
  requestProblem
} from './messages';
import type { Dropped } from './dropped';

export type { CellType, Reply, Request } from './messages';

export const PROTOCOL = 1;
export const COMM_TARGET = 'blitz.notebook';

const CELL_TYPES: readonly CellType[] = ['code', 'markdown', 'raw'];

/** An nbformat output, as `IOutputModel.toJSON()` returns it. */
export type OutputJSON = { output_type: string; [key: string]: unknown };

/** One cell as the protocol sees it. */
export interface CellSnapshot {
  id: string;
  cell_type: CellType;
  source: string;
  execution_count: number | null;
  /** Running or queued to run (JupyterLab shows [*]). */
  running: boolean;
  outputs: OutputJSON[];
  /** The cell's `blitz` metadata key, when it has one. */
  blitz?: Record<string, unknown>;
}

/** What request handling needs from a notebook; document.ts adapts a NotebookPanel. */
export interface NotebookDocument {
  readonly path: string;
  cellCount(): number;
  cell(index: number): CellSnapshot;
  /** Insert a new cell at `index`; returns its id. */
  insertCell(index: number, cellType: CellType, source: string): string;
  setSource(index: number, source: string): void;
  /** Replace cell `index` by a new cell of another type; returns the new id. */
  replaceWithType(index: number, cellType: CellType, source: string): string;
  deleteCell(index: number): void;
  /** Put nbformat outputs, an execution count and the `blitz` metadata key (null: removed)
   * into code cell `index`, as if it had run. */
  /** Set (or, with null, remove) code cell `index`'s `blitz` metadata key. */
  setBlitz(index: number, blitz: Record<string, unknown> | null): void;
  setOutputs(index: number, outputs: OutputJSON[], executionCount: number | null, blitz: Record<string, unknown> | null): void;
  /** Scroll cell `index` into view and highlight it briefly. */
  reveal(index: number): void;
}

/**
 * Who answers permission questions about outside clients' calls (`ask_permission`):
 * permission.ts shows them as cards in the notebook panel.
 */
export interface PermissionAsker {
  /** Show the question; resolves with the person's answer. */
  ask(params: AskPermissionParams): Promise<AskPermissionResult>;
  /** Take the question back; false when it was no longer shown. */
  close(question: string): boolean;
}

/** A refusal with a code the kernel can show; anything else thrown becomes `internal`. */
export class BridgeError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string
  ) {
    super(message);
  }
}

const DEFAULT_OUTPUT_CHARS = 8000;
const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif'];

/**
 * The request in a comm message from the kernel, or null: the kernel's welcome (nothing to
 * answer), or a message that is no request, which `dropped` logs once per kind.
 */
export function receivedRequest(data: unknown, dropped: Dropped): Request | null {
  if (typeof data === 'object' && data !== null && (data as { kind?: unknown }).kind === 'welcome') {
    return null;
  }
  const problem = requestProblem(data);
  if (problem !== null) {
    dropped.drop(data, problem);
    return null;
  }
  return data as Request;
}

/** Answer one request. Never throws: failures come back as error replies. */
export async function handleRequest(doc: NotebookDocument, request: Request, asker?: PermissionAsker): Promise<Reply> {
  const id = String(request.id);
  try {
    const handler = HANDLERS[request.op];
    if (handler === undefined) {
      throw new BridgeError('unknown_op', `unknown op ${JSON.stringify(request.op)}`);
    }
    const result = await handler(doc, request.params ?? {}, asker);
    const reply: Reply = { kind: 'reply', id, ok: true, result };
    const problem = replyProblem(request.op, reply);
    if (problem !== null) {
      throw new BridgeError('internal', `the front end made a malformed ${request.op} result: ${problem}`);
    }
    return reply;
  } catch (error) {
    if (error instanceof BridgeError) {
      return { kind: 'reply', id, ok: false, error: { code: error.code, message: error.message } };
    }
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    return { kind: 'reply', id, ok: false, error: { code: 'internal', message } };
  }
}

type Params = Record<string, unknown>;
type Handler = (doc: NotebookDocument, params: Params, asker?: PermissionAsker) => OpResult | Promise<OpResult>;

const HANDLERS: Record<string, Handler> = {
  list_cells: doc => ({
    path: doc.path,
    cell_count: doc.cellCount(),
    cells: range(doc.cellCount()).map((index): CellSummary => {
      const cell = doc.cell(index);
      const lines = cell.source.split('\n');
      return {
        index,
        id: cell.id,
        cell_type: cell.cell_type,
        execution_count: cell.execution_count,
        running: cell.running,
        first_line: lines.find(line => line.trim() !== '') ?? '',
        line_count: cell.source === '' ? 0 : lines.length,
        output_count: cell.outputs.length
      };
    })
  }),

  read_cells: (doc, params) => {
    const count = doc.cellCount();
    const indices =
      params.indices === null || params.indices === undefined
        ? range(count)
        : integerList(params.indices, 'indices').map(index => checkIndex(index, count));
    const includeOutputs = params.include_outputs !== false;
    const includeImages = params.include_images === true;
    const maxChars = typeof params.max_output_chars === 'number' ? params.max_output_chars : DEFAULT_OUTPUT_CHARS;
    return {
      path: doc.path,
      cell_count: count,
      cells: indices.map((index): CellRecord => {
        const cell = doc.cell(index);
        return {
          index,
          id: cell.id,
          cell_type: cell.cell_type,
          source: cell.source,
          execution_count: cell.execution_count,
          running: cell.running,
          outputs: includeOutputs ? cell.outputs.map(o => summariseOutput(o, includeImages, maxChars)) : [],
          ...(cell.blitz === undefined ? {} : { blitz: cell.blitz })
        };
      })
    };
  },

  insert_cell: (doc, params) => {
    const count = doc.cellCount();
    const index = integer(params.index, 'index');
    if (index < 0 || index > count) {
      throw new BridgeError('bad_index', `cannot insert at ${index}: the notebook has ${count} cells (0..${count} allowed)`);
    }
    const cellType = cellTypeOf(params.cell_type ?? 'code');
    const blitz = blitzOf(params.metadata);
    const id = doc.insertCell(index, cellType, text(params.source, 'source'));
    if (blitz !== null) {
      doc.setBlitz(index, blitz);
    }
    doc.reveal(index);
    return { index, id, cell_count: doc.cellCount() };
  },

  replace_cell: (doc, params) => {
    const index = checkIndex(integer(params.index, 'index'), doc.cellCount());
    const source = text(params.source, 'source');
    const cell = doc.cell(index);
    refuseRunning(cell, index, 'replace');
    const cellType = params.cell_type === undefined ? cell.cell_type : cellTypeOf(params.cell_type);
    const blitz = blitzOf(params.metadata);
    let id = cell.id;
    if (cellType === cell.cell_type) {
      doc.setSource(index, source);
    } else {
      id = doc.replaceWithType(index, cellType, source);
    }
    if (blitz !== null) {
      doc.setBlitz(index, blitz);
    }
    doc.reveal(index);
    return { index, id, cell_type: cellType, previous_source: cell.source, cell_count: doc.cellCount() };
  },

  delete_cell: (doc, params) => {
    const index = checkIndex(integer(params.index, 'index'), doc.cellCount());
    const cell = doc.cell(index);
    refuseRunning(cell, index, 'delete');
    doc.deleteCell(index);
    return { deleted: { id: cell.id, cell_type: cell.cell_type, source: cell.source }, cell_count: doc.cellCount() };
  },

  set_outputs: (doc, params) => {
    const id = text(params.id, 'id');
    const index = range(doc.cellCount()).find(i => doc.cell(i).id === id);
    if (index === undefined) {
      throw new BridgeError('bad_index', `no cell with id ${JSON.stringify(id)}: it was deleted or replaced`);
    }
    const cell = doc.cell(index);
    if (cell.cell_type !== 'code') {
      throw new BridgeError('bad_request', `cell ${index} is a ${cell.cell_type} cell; only code cells have outputs`);
    }
    if (!Array.isArray(params.outputs) || !params.outputs.every(isOutput)) {
      throw new BridgeError('bad_request', 'outputs must be a list of nbformat outputs (each with an output_type)');
    }
    const count = params.execution_count;
    if (count !== null && (typeof count !== 'number' || !Number.isInteger(count))) {
      throw new BridgeError('bad_request', 'execution_count must be an integer or null');
    }
    const blitz = blitzOf(params.metadata);
    doc.setOutputs(index, params.outputs as OutputJSON[], count, blitz);
    doc.reveal(index);
    return {
      index,
      id,
      previous_outputs: cell.outputs,
      previous_execution_count: cell.execution_count,
      previous_metadata: cell.blitz ?? null
    };
  },

  ask_permission: (_doc, params, asker) => {
    if (asker === undefined) {
      throw new BridgeError('unknown_op', 'this front end cannot ask permission questions');
    }
    const calls = params.calls;
    const callsOk =
      Array.isArray(calls) &&
      calls.length > 0 &&
      calls.every(c => typeof c === 'object' && c !== null && ['id', 'name', 'preview'].every(k => typeof (c as Params)[k] === 'string'));
    if (!callsOk) {
      throw new BridgeError('bad_request', 'calls must be a non-empty list of {id, name, preview}');
    }
    const timeout = params.timeout_s;
    if (timeout !== undefined && timeout !== null && typeof timeout !== 'number') {
      throw new BridgeError('bad_request', 'timeout_s must be a number or null');
    }
    return asker.ask({
      question: text(params.question, 'question'),
      client: text(params.client, 'client'),
      calls: calls as AskPermissionParams['calls'],
      timeout_s: timeout ?? null
    });
  },

  close_permission: (_doc, params, asker) => ({ closed: asker?.close(text(params.question, 'question')) ?? false })
};

/** A request's `metadata` (the cell's `blitz` key): an object, or null / left out. */
function blitzOf(value: unknown): Record<string, unknown> | null {
  if (value === undefined || value === null) {
    return null;
  }
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new BridgeError('bad_request', 'metadata must be an object or null');
  }
  return value as Record<string, unknown>;
}

function isOutput(value: unknown): boolean {
  return typeof value === 'object' && value !== null && typeof (value as OutputJSON).output_type === 'string';
}

/** An output as the kernel reads it: text capped, images described (data only on request). */
export function summariseOutput(output: OutputJSON, includeImages: boolean, maxChars: number): OutputRecord {
  const kind = output.output_type;
  if (kind === 'stream') {
    return { output_type: kind, name: String(output.name ?? 'stdout'), text: cap(joined(output.text), maxChars) };
  }
  if (kind === 'error') {
    const traceback = Array.isArray(output.traceback) ? output.traceback.join('\n') : '';
    return {
      output_type: kind,
      ename: String(output.ename ?? ''),
      evalue: String(output.evalue ?? ''),
      traceback: cap(stripAnsi(traceback), maxChars)
    };
  }
  const data = (output.data ?? {}) as Record<string, unknown>;
  const images = IMAGE_TYPES.filter(mime => typeof data[mime] === 'string' || Array.isArray(data[mime])).map(mime => {
    const encoded = joined(data[mime]).replace(/\s/g, '');
    const image: ImageInfo = { mime_type: mime, ...imageSize(encoded) };
    if (includeImages) {
      image.data = encoded;
    }
    return image;
  });
  const shown = data['text/markdown'] ?? data['text/plain'] ?? '';
  const rich = kind === 'execute_result' ? kind : 'display_data';
  return { output_type: rich, mime_types: Object.keys(data), text: cap(joined(shown), maxChars), images };
}

/** Width and height from a base64 PNG's or GIF's header, when it has one. */
export function imageSize(encoded: string): { width?: number; height?: number } {
  let head: string;
  try {
    head = atob(encoded.slice(0, 44));
  } catch {
    return {};
  }
  const byte = (i: number) => head.charCodeAt(i);
  if (head.startsWith('\x89PNG') && head.slice(12, 16) === 'IHDR') {
    const u32 = (i: number) => ((byte(i) << 24) | (byte(i + 1) << 16) | (byte(i + 2) << 8) | byte(i + 3)) >>> 0;
    return { width: u32(16), height: u32(20) };
  }
  if (head.startsWith('GIF8')) {
    return { width: byte(6) | (byte(7) << 8), height: byte(8) | (byte(9) << 8) };
  }
  return {};
}

/** `%%blitz` and `%%blitz_btw` cells: their body is a prompt, shown as Markdown. */
export function isBlitzPrompt(source: string): boolean {
  return /^\s*%%blitz(_btw)?(\s|$)/.test(source);
}

function refuseRunning(cell: CellSnapshot, index: number, action: string): void {
  if (cell.running) {
    const what = isBlitzPrompt(cell.source) ? 'the running %%blitz cell' : 'running or queued to run';
    throw new BridgeError('running_cell', `cannot ${action} cell ${index}: it is ${what}`);
  }
}

function range(count: number): number[] {
  return Array.from({ length: count }, (_, i) => i);
}

function integer(value: unknown, name: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    throw new BridgeError('bad_request', `${name} must be an integer, got ${JSON.stringify(value)}`);
  }
  return value;
}

function integerList(value: unknown, name: string): number[] {
  if (!Array.isArray(value)) {
    throw new BridgeError('bad_request', `${name} must be a list of integers`);
  }
  return value.map(item => integer(item, name));
}

function checkIndex(index: number, count: number): number {
  if (index < 0 || index >= count) {
    const allowed = count === 0 ? 'it has no cells' : `0..${count - 1}`;
    throw new BridgeError('bad_index', `no cell ${index}: the notebook has ${count} cells (${allowed})`);
  }
  return index;
}

function cellTypeOf(value: unknown): CellType {
  if (!CELL_TYPES.includes(value as CellType)) {
    throw new BridgeError('bad_request', `cell_type must be code, markdown or raw, got ${JSON.stringify(value)}`);
  }
  return value as CellType;
}

function text(value: unknown, name: string): string {
  if (typeof value !== 'string') {
    throw new BridgeError('bad_request', `${name} must be a string`);
  }
  return value;
}

function joined(value: unknown): string {
  return Array.isArray(value) ? value.join('') : typeof value === 'string' ? value : '';
}

function cap(value: string, limit: number): string {
  if (value.length <= limit) {
    return value;
  }
  return `${value.slice(0, limit)}\n[... ${value.length - limit} more characters]`;
}

function stripAnsi(value: string): string {
  // eslint-disable-next-line no-control-regex
  return value.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '');
}
