/**
 * The bridge's messages (protocol 1), and runtime checks of what this front end receives
 * (a request) and of the replies it sends. The types are generated from the Python models
 * (generated/protocol.ts, from blitz_kernel/protocol_schema.py; docs/widget.md), so
 * the compiler holds this side to the shapes the kernel checks: each check below is typed by
 * the generated type it checks, and one that misses a field of it does not compile. A reply
 * that does not fit would fail on the kernel's side, so it is caught here first and sent as
 * an `internal` error reply that says what is wrong.
 */

import type {
  AskPermissionParams,
  AskPermissionResult,
  Cell,
  ClosePermissionResult,
  CellSummary,
  CellType,
  DeleteCellResult,
  ErrorCode,
  ErrorOutput,
  ErrorReply,
  ImageInfo,
  InsertCellResult,
  ListCellsResult,
  OkReply,
  Op,
  ReadCellsResult,
  ReplaceCellResult,
  Request as GeneratedRequest,
  SetOutputsResult,
  RichOutput,
  StreamOutput
} from './generated/protocol';

export type {
  AskPermissionParams,
  AskPermissionResult,
  ClosePermissionResult,
  CellSummary,
  CellType,
  DeleteCellResult,
  ErrorCode,
  ImageInfo,
  InsertCellResult,
  ListCellsResult,
  Op,
  ReadCellsResult,
  ReplaceCellResult,
  SetOutputsResult
};
export type CellRecord = Cell;
export type OutputRecord = StreamOutput | ErrorOutput | RichOutput;

/**
 * A request as it arrives: the kernel's `Request`, except that a newer kernel may send an op
 * this front end does not know (it is answered `unknown_op`, never left waiting) and `params`
 * may be left out; each handler checks the params it reads.
 */
export type Request = Omit<GeneratedRequest, 'op' | 'params'> & { op: string; params?: Record<string, unknown> };

/** Each op's result. */
export type OpResults = {
  list_cells: ListCellsResult;
  read_cells: ReadCellsResult;
  insert_cell: InsertCellResult;
  replace_cell: ReplaceCellResult;
  delete_cell: DeleteCellResult;
  set_outputs: SetOutputsResult;
  ask_permission: AskPermissionResult;
  close_permission: ClosePermissionResult;
};
export type OpResult = OpResults[Op];

export type Reply = (Omit<OkReply, 'result'> & { result: OpResult }) | ErrorReply;

// -- the runtime checks ---------------------------------------------------------------------

/**
 * A check of one value: null when it fits `T`, else what is wrong, naming where
 * (`result.cells[0].id`). `T` is carried in the type only, so that `object<T>` can demand a
 * check of the right type for every field of `T`.
 */
export type Check<T> = ((value: unknown, where: string) => string | null) & { readonly __checks?: T };

const first = (problems: (string | null)[]): string | null => problems.find(p => p !== null) ?? null;
const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const str: Check<string> = (v, w) => (typeof v === 'string' ? null : `${w} must be a string`);
const int: Check<number> = (v, w) => (typeof v === 'number' && Number.isInteger(v) ? null : `${w} must be an integer`);
const bool: Check<boolean> = (v, w) => (typeof v === 'boolean' ? null : `${w} must be true or false`);
const exactly =
  <T extends boolean | string>(value: T): Check<T> =>
  (v, w) =>
    v === value ? null : `${w} must be ${JSON.stringify(value)}`;
const nullable =
  <T>(check: Check<T>): Check<T | null> =>
  (v, w) =>
    v === null ? null : check(v, w);
const optional =
  <T>(check: Check<T>): Check<T | undefined> =>
  (v, w) =>
    v === undefined ? null : check(v, w);
const oneOf =
  <T extends string>(...allowed: T[]): Check<T> =>
  (v, w) =>
    typeof v === 'string' && (allowed as string[]).includes(v) ? null : `${w} must be one of ${allowed.join(', ')}`;
const list =
  <T>(check: Check<T>): Check<T[]> =>
  (v, w) =>
    Array.isArray(v) ? first(v.map((item, i) => check(item, `${w}[${i}]`))) : `${w} must be a list`;
const record: Check<Record<string, unknown>> = (v, w) => (isRecord(v) ? null : `${w} must be an object`);
/** An object with a check for every field of `T` (the compiler sees that none is missing). */
const object =
  <T>(fields: { [K in keyof T]-?: Check<T[K]> }): Check<T> =>
  (v, w) =>
    isRecord(v)
      ? first(Object.entries(fields).map(([key, check]) => (check as Check<unknown>)(v[key], `${w}.${key}`)))
      : `${w} must be an object`;
/** An object whose `key` picks its shape. */
const tagged =
  <T>(key: string, shapes: Record<string, Check<T>>): Check<T> =>
  (v, w) => {
    const tag = isRecord(v) ? v[key] : undefined;
    const shape = typeof tag === 'string' ? shapes[tag] : undefined;
    return shape === undefined ? `${w}.${key} must be one of ${Object.keys(shapes).join(', ')}` : shape(v, w);
  };

const cellType = oneOf<CellType>('code', 'markdown', 'raw');
const image = object<ImageInfo>({
  mime_type: str,
  width: optional(nullable(int)),
  height: optional(nullable(int)),
  data: optional(nullable(str))
});
const rich = object<RichOutput>({
  output_type: oneOf('execute_result', 'display_data'),
  mime_types: list(str),
  text: str,
  images: list(image)
});
const output = tagged<OutputRecord>('output_type', {
  stream: object<StreamOutput>({ output_type: exactly('stream'), name: str, text: str }),
  error: object<ErrorOutput>({ output_type: exactly('error'), ename: str, evalue: str, traceback: str }),
  execute_result: rich,
  display_data: rich
});
const cellBase = { index: int, id: str, cell_type: cellType, execution_count: nullable(int), running: bool };

export const RESULTS: { [K in Op]: Check<OpResults[K]> } = {
  list_cells: object<ListCellsResult>({
    path: str,
    cell_count: int,
    cells: list(object<CellSummary>({ ...cellBase, first_line: str, line_count: int, output_count: int }))
  }),
  read_cells: object<ReadCellsResult>({
    path: str,
    cell_count: int,
    cells: list(object<Cell>({ ...cellBase, source: str, outputs: list(output), blitz: optional(nullable(record)) }))
  }),
  insert_cell: object<InsertCellResult>({ index: int, id: str, cell_count: int }),
  replace_cell: object<ReplaceCellResult>({
    index: int,
    id: str,
    cell_type: cellType,
    previous_source: str,
    cell_count: int
  }),
  delete_cell: object<DeleteCellResult>({
    deleted: object({ id: str, cell_type: cellType, source: str }),
    cell_count: int
  }),
  set_outputs: object<SetOutputsResult>({
    index: int,
    id: str,
    previous_outputs: list(record),
    previous_execution_count: nullable(int),
    previous_metadata: optional(nullable(record))
  }),
  ask_permission: object<AskPermissionResult>({
    answer: oneOf('allow', 'always', 'deny'),
    reason: optional(nullable(str))
  }),
  close_permission: object<ClosePermissionResult>({ closed: bool })
};

const ERROR = object<ErrorReply['error']>({
  code: oneOf<ErrorCode>('bad_request', 'bad_index', 'running_cell', 'unknown_op', 'internal'),
  message: str
});

const REQUEST = object<Request>({ kind: exactly('request'), id: str, op: str, params: optional(record) });

/** What is wrong with `reply` as the answer to a request for `op`; null when it fits. */
export function replyProblem(op: string, reply: unknown): string | null {
  if (!isRecord(reply) || reply.kind !== 'reply') {
    return 'a reply must be an object of kind "reply"';
  }
  const envelope = first([str(reply.id, 'id'), bool(reply.ok, 'ok')]);
  if (envelope !== null) {
    return envelope;
  }
  if (reply.ok === false) {
    return ERROR(reply.error, 'error');
  }
  const check = (RESULTS as Record<string, Check<unknown>>)[op];
  return check === undefined ? `no result is defined for op ${JSON.stringify(op)}` : check(reply.result, 'result');
}

/** What is wrong with `data` as a request from the kernel; null when it is one. */
export function requestProblem(data: unknown): string | null {
  return REQUEST(data, 'request');
}

/** `data` as a request, once `requestProblem` found nothing wrong with it. */
export function isRequest(data: unknown): data is Request {
  return requestProblem(data) === null;
}
