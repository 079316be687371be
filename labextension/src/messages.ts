/**
 * The bridge's messages (protocol 1) as types, and a runtime check of the replies this front
 * end sends. They mirror blitz_kernel/notebook/bridge_messages.py, which checks the same shapes
 * on the kernel's side: a reply that does not fit would fail there, so it is caught here
 * first and sent as an `internal` error reply that says what is wrong.
 */

export type CellType = 'code' | 'markdown' | 'raw';
export type ErrorCode = 'bad_request' | 'bad_index' | 'running_cell' | 'unknown_op' | 'internal';
export type Op = 'list_cells' | 'read_cells' | 'insert_cell' | 'replace_cell' | 'delete_cell' | 'set_outputs';

/** What the kernel sends; `op` and `params` are checked by the handlers, not trusted. */
export interface Request {
  kind: 'request';
  id: string;
  op: string;
  params?: Record<string, unknown>;
}

export type ImageInfo = { mime_type: string; width?: number; height?: number; data?: string };

export type OutputRecord =
  | { output_type: 'stream'; name: string; text: string }
  | { output_type: 'error'; ename: string; evalue: string; traceback: string }
  | { output_type: 'execute_result' | 'display_data'; mime_types: string[]; text: string; images: ImageInfo[] };

export type CellSummary = {
  index: number;
  id: string;
  cell_type: CellType;
  execution_count: number | null;
  running: boolean;
  first_line: string;
  line_count: number;
  output_count: number;
};

export type CellRecord = {
  index: number;
  id: string;
  cell_type: CellType;
  source: string;
  execution_count: number | null;
  running: boolean;
  outputs: OutputRecord[];
  /** The cell's `blitz` metadata (which session and turn made or ran it), when it has one. */
  blitz?: Record<string, unknown>;
};

export type ListCellsResult = { path: string; cell_count: number; cells: CellSummary[] };
export type ReadCellsResult = { path: string; cell_count: number; cells: CellRecord[] };
export type InsertCellResult = { index: number; id: string; cell_count: number };
export type ReplaceCellResult = {
  index: number;
  id: string;
  cell_type: CellType;
  previous_source: string;
  cell_count: number;
};
export type DeleteCellResult = { deleted: { id: string; cell_type: CellType; source: string }; cell_count: number };
export type SetOutputsResult = {
  index: number;
  id: string;
  previous_outputs: Record<string, unknown>[];
  previous_execution_count: number | null;
  previous_metadata: Record<string, unknown> | null;
};

/** Each op's result. */
export type OpResults = {
  list_cells: ListCellsResult;
  read_cells: ReadCellsResult;
  insert_cell: InsertCellResult;
  replace_cell: ReplaceCellResult;
  delete_cell: DeleteCellResult;
  set_outputs: SetOutputsResult;
};
export type OpResult = OpResults[Op];

export type Reply =
  | { kind: 'reply'; id: string; ok: true; result: OpResult }
  | { kind: 'reply'; id: string; ok: false; error: { code: ErrorCode; message: string } };

// -- the runtime check ----------------------------------------------------------------------

/** A check of one value: null when it fits, else what is wrong, naming where (`result.cells[0].id`). */
type Check = (value: unknown, where: string) => string | null;

const first = (problems: (string | null)[]): string | null => problems.find(p => p !== null) ?? null;
const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const str: Check = (v, w) => (typeof v === 'string' ? null : `${w} must be a string`);
const int: Check = (v, w) => (typeof v === 'number' && Number.isInteger(v) ? null : `${w} must be an integer`);
const bool: Check = (v, w) => (typeof v === 'boolean' ? null : `${w} must be true or false`);
const nullable =
  (check: Check): Check =>
  (v, w) =>
    v === null ? null : check(v, w);
const optional =
  (check: Check): Check =>
  (v, w) =>
    v === undefined ? null : check(v, w);
const oneOf =
  (...allowed: string[]): Check =>
  (v, w) =>
    typeof v === 'string' && allowed.includes(v) ? null : `${w} must be one of ${allowed.join(', ')}`;
const list =
  (check: Check): Check =>
  (v, w) =>
    Array.isArray(v) ? first(v.map((item, i) => check(item, `${w}[${i}]`))) : `${w} must be a list`;
const object =
  (fields: Record<string, Check>): Check =>
  (v, w) =>
    isRecord(v) ? first(Object.entries(fields).map(([key, check]) => check(v[key], `${w}.${key}`))) : `${w} must be an object`;
/** An object whose `key` picks its shape. */
const tagged =
  (key: string, shapes: Record<string, Check>): Check =>
  (v, w) => {
    const tag = isRecord(v) ? v[key] : undefined;
    const shape = typeof tag === 'string' ? shapes[tag] : undefined;
    return shape === undefined ? `${w}.${key} must be one of ${Object.keys(shapes).join(', ')}` : shape(v, w);
  };

const cellType = oneOf('code', 'markdown', 'raw');
const record: Check = (v, w) => (isRecord(v) ? null : `${w} must be an object`);
const image = object({ mime_type: str, width: optional(int), height: optional(int), data: optional(str) });
const rich = object({ mime_types: list(str), text: str, images: list(image) });
const output = tagged('output_type', {
  stream: object({ name: str, text: str }),
  error: object({ ename: str, evalue: str, traceback: str }),
  execute_result: rich,
  display_data: rich
});
const cellBase = { index: int, id: str, cell_type: cellType, execution_count: nullable(int), running: bool };

const RESULTS: Record<Op, Check> = {
  list_cells: object({
    path: str,
    cell_count: int,
    cells: list(object({ ...cellBase, first_line: str, line_count: int, output_count: int }))
  }),
  read_cells: object({
    path: str,
    cell_count: int,
    cells: list(object({ ...cellBase, source: str, outputs: list(output), blitz: optional(record) }))
  }),
  insert_cell: object({ index: int, id: str, cell_count: int }),
  replace_cell: object({ index: int, id: str, cell_type: cellType, previous_source: str, cell_count: int }),
  delete_cell: object({ deleted: object({ id: str, cell_type: cellType, source: str }), cell_count: int }),
  set_outputs: object({
    index: int,
    id: str,
    previous_outputs: list(record),
    previous_execution_count: nullable(int),
    previous_metadata: nullable(record)
  })
};

const ERROR = object({
  code: oneOf('bad_request', 'bad_index', 'running_cell', 'unknown_op', 'internal'),
  message: str
});

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
  const check = RESULTS[op as Op] as Check | undefined;
  return check === undefined ? `no result is defined for op ${JSON.stringify(op)}` : check(reply.result, 'result');
}
