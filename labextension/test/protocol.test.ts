/**
 * The front end's request handling, on an in-memory notebook: every op, every refusal, and
 * the reply shapes blitz_kernel/notebook/bridge.py documents.
 */

import { describe, expect, it } from 'vitest';

import {
  type CellSnapshot,
  type PermissionAsker,
  type CellType,
  type NotebookDocument,
  type Reply,
  handleRequest,
  imageSize,
  isBlitzPrompt,
  summariseOutput
} from '../src/protocol';
import { type AskPermissionParams, type AskPermissionResult, replyProblem } from '../src/messages';

/** A 3×2 PNG's first bytes (signature and IHDR), base64: enough for its size. */
const PNG_HEAD = btoa('\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x00\x00\x03\x00\x00\x00\x02\x08\x02\x00\x00\x00');

class MemoryNotebook implements NotebookDocument {
  readonly path = 'work/analysis.ipynb';
  revealed: number[] = [];
  private nextId = 1;

  constructor(public cells: CellSnapshot[]) {}

  cellCount(): number {
    return this.cells.length;
  }

  cell(index: number): CellSnapshot {
    return this.cells[index];
  }

  insertCell(index: number, cellType: CellType, source: string): string {
    const id = `new-${this.nextId++}`;
    this.cells.splice(index, 0, { id, cell_type: cellType, source, execution_count: null, running: false, outputs: [] });
    return id;
  }

  setSource(index: number, source: string): void {
    this.cells[index] = { ...this.cells[index], source };
  }

  replaceWithType(index: number, cellType: CellType, source: string): string {
    this.cells.splice(index, 1);
    return this.insertCell(index, cellType, source);
  }

  deleteCell(index: number): void {
    this.cells.splice(index, 1);
  }

  setBlitz(index: number, blitz: Record<string, unknown> | null): void {
    const { blitz: _old, ...rest } = this.cells[index];
    this.cells[index] = blitz === null ? rest : { ...rest, blitz };
  }

  setOutputs(
    index: number,
    outputs: CellSnapshot['outputs'],
    executionCount: number | null,
    blitz: Record<string, unknown> | null
  ): void {
    const { blitz: _old, ...rest } = this.cells[index];
    this.cells[index] = { ...rest, outputs, execution_count: executionCount, ...(blitz === null ? {} : { blitz }) };
  }

  reveal(index: number): void {
    this.revealed.push(index);
  }
}

function notebook(): MemoryNotebook {
  return new MemoryNotebook([
    { id: 'intro', cell_type: 'markdown', source: '# Sales\n\nQuarterly numbers.', execution_count: null, running: false, outputs: [] },
    {
      id: 'load',
      cell_type: 'code',
      source: 'df = load()\ndf.plot()',
      execution_count: 3,
      running: false,
      outputs: [
        { output_type: 'stream', name: 'stdout', text: ['loaded ', '3 rows\n'] },
        { output_type: 'display_data', data: { 'image/png': PNG_HEAD, 'text/plain': '<Figure size 640x480>' }, metadata: {} },
        { output_type: 'error', ename: 'KeyError', evalue: "'x'", traceback: ['\u001b[31mKeyError\u001b[0m', "'x'"] }
      ]
    },
    { id: 'ask', cell_type: 'code', source: '%%blitz\nTidy this notebook.', execution_count: null, running: true, outputs: [] }
  ]);
}

async function ask(doc: NotebookDocument, op: string, params?: Record<string, unknown>): Promise<Reply> {
  return handleRequest(doc, { kind: 'request', id: 'r-1', op, params });
}

function result(reply: Reply): Record<string, unknown> {
  if (!reply.ok) {
    throw new Error(`expected ok, got ${reply.error.code}: ${reply.error.message}`);
  }
  return reply.result as unknown as Record<string, unknown>; // read field by field in the tests
}

describe('list_cells', () => {
  it('lists every cell with a one-line summary', async () => {
    const reply = await ask(notebook(), 'list_cells');
    expect(reply.id).toBe('r-1');
    expect(result(reply)).toEqual({
      path: 'work/analysis.ipynb',
      cell_count: 3,
      cells: [
        { index: 0, id: 'intro', cell_type: 'markdown', execution_count: null, running: false, first_line: '# Sales', line_count: 3, output_count: 0 },
        { index: 1, id: 'load', cell_type: 'code', execution_count: 3, running: false, first_line: 'df = load()', line_count: 2, output_count: 3 },
        { index: 2, id: 'ask', cell_type: 'code', execution_count: null, running: true, first_line: '%%blitz', line_count: 2, output_count: 0 }
      ]
    });
  });
});

describe('read_cells', () => {
  it('reads all cells with summarised outputs and no image data by default', async () => {
    const read = result(await ask(notebook(), 'read_cells', { indices: null, include_outputs: true, include_images: false }));
    const cells = read.cells as Record<string, unknown>[];
    expect(cells.map(c => c.index)).toEqual([0, 1, 2]);
    expect(cells[1].outputs).toEqual([
      { output_type: 'stream', name: 'stdout', text: 'loaded 3 rows\n' },
      {
        output_type: 'display_data',
        mime_types: ['image/png', 'text/plain'],
        text: '<Figure size 640x480>',
        images: [{ mime_type: 'image/png', width: 3, height: 2 }]
      },
      { output_type: 'error', ename: 'KeyError', evalue: "'x'", traceback: "KeyError\n'x'" }
    ]);
    expect(cells[2]).toMatchObject({ source: '%%blitz\nTidy this notebook.', running: true });
  });

  it('reads chosen cells, with image data on request, or without outputs', async () => {
    const doc = notebook();
    const withImages = result(await ask(doc, 'read_cells', { indices: [1], include_images: true }));
    const [cell] = withImages.cells as { outputs: { images?: { data?: string }[] }[] }[];
    expect(cell.outputs[1].images?.[0].data).toBe(PNG_HEAD);
    const bare = result(await ask(doc, 'read_cells', { indices: [1, 0], include_outputs: false }));
    expect((bare.cells as { index: number; outputs: unknown[] }[]).map(c => [c.index, c.outputs.length])).toEqual([
      [1, 0],
      [0, 0]
    ]);
  });

  it('caps long output text', async () => {
    const doc = new MemoryNotebook([
      { id: 'a', cell_type: 'code', source: '', execution_count: 1, running: false, outputs: [{ output_type: 'stream', name: 'stdout', text: 'x'.repeat(50) }] }
    ]);
    const read = result(await ask(doc, 'read_cells', { max_output_chars: 10 }));
    const [cell] = read.cells as { outputs: { text: string }[] }[];
    expect(cell.outputs[0].text).toBe('xxxxxxxxxx\n[... 40 more characters]');
  });

  it('refuses an index outside the notebook', async () => {
    const reply = await ask(notebook(), 'read_cells', { indices: [0, 7] });
    expect(reply).toEqual({
      kind: 'reply',
      id: 'r-1',
      ok: false,
      error: { code: 'bad_index', message: 'no cell 7: the notebook has 3 cells (0..2)' }
    });
  });
});

describe('insert_cell', () => {
  it('inserts, reveals and reports the new count', async () => {
    const doc = notebook();
    const reply = result(await ask(doc, 'insert_cell', { index: 3, cell_type: 'code', source: 'df.describe()' }));
    expect(reply).toEqual({ index: 3, id: 'new-1', cell_count: 4 });
    expect(doc.cells[3]).toMatchObject({ cell_type: 'code', source: 'df.describe()' });
    expect(doc.revealed).toEqual([3]);
  });

  it('defaults to a code cell and checks its arguments', async () => {
    const doc = notebook();
    result(await ask(doc, 'insert_cell', { index: 0, source: 'x' }));
    expect(doc.cells[0].cell_type).toBe('code');
    const errors = await Promise.all([
      ask(doc, 'insert_cell', { index: 9, source: 'x' }),
      ask(doc, 'insert_cell', { index: 1.5, source: 'x' }),
      ask(doc, 'insert_cell', { index: 0, source: 7 }),
      ask(doc, 'insert_cell', { index: 0, source: 'x', cell_type: 'python' })
    ]);
    expect(errors.map(e => (e.ok ? 'ok' : `${e.error.code}: ${e.error.message}`))).toEqual([
      'bad_index: cannot insert at 9: the notebook has 4 cells (0..4 allowed)',
      'bad_request: index must be an integer, got 1.5',
      'bad_request: source must be a string',
      'bad_request: cell_type must be code, markdown or raw, got "python"'
    ]);
  });
});

describe('replace_cell', () => {
  it('replaces the source, keeping the type and id, and returns the previous source', async () => {
    const doc = notebook();
    const reply = result(await ask(doc, 'replace_cell', { index: 1, source: 'df = load(limit=10)' }));
    expect(reply).toEqual({ index: 1, id: 'load', cell_type: 'code', previous_source: 'df = load()\ndf.plot()', cell_count: 3 });
    expect(doc.cells[1].source).toBe('df = load(limit=10)');
    expect(doc.revealed).toEqual([1]);
  });

  it('changes the type when asked', async () => {
    const doc = notebook();
    const reply = result(await ask(doc, 'replace_cell', { index: 0, source: 'print(1)', cell_type: 'code' }));
    expect(reply).toMatchObject({ id: 'new-1', cell_type: 'code', previous_source: '# Sales\n\nQuarterly numbers.' });
    expect(doc.cells.map(c => c.cell_type)).toEqual(['code', 'code', 'code']);
  });

  it('refuses the running %%blitz cell', async () => {
    const doc = notebook();
    const reply = await ask(doc, 'replace_cell', { index: 2, source: 'x' });
    expect(reply.ok ? null : reply.error).toEqual({ code: 'running_cell', message: 'cannot replace cell 2: it is the running %%blitz cell' });
    expect(doc.cells[2].source).toBe('%%blitz\nTidy this notebook.');
  });
});

describe('delete_cell', () => {
  it('deletes and returns what was deleted', async () => {
    const doc = notebook();
    const reply = result(await ask(doc, 'delete_cell', { index: 0 }));
    expect(reply).toEqual({ deleted: { id: 'intro', cell_type: 'markdown', source: '# Sales\n\nQuarterly numbers.' }, cell_count: 2 });
    expect(doc.cells.map(c => c.id)).toEqual(['load', 'ask']);
  });

  it('refuses a running cell and a missing one', async () => {
    const doc = notebook();
    const running = await ask(doc, 'delete_cell', { index: 2 });
    const missing = await ask(doc, 'delete_cell', { index: 3 });
    expect(running.ok ? null : running.error.code).toBe('running_cell');
    expect(missing.ok ? null : missing.error.message).toBe('no cell 3: the notebook has 3 cells (0..2)');
    expect(doc.cellCount()).toBe(3);
  });
});

describe('the agent\'s mark', () => {
  it('insert_cell and replace_cell put the metadata they are given under the cell\'s blitz key', async () => {
    const doc = notebook();
    const mark = { session: 'default', turn: 2, edited: true };
    result(await ask(doc, 'insert_cell', { index: 0, source: 'x = 1', metadata: mark }));
    result(await ask(doc, 'replace_cell', { index: 2, source: 'df = load(2)', metadata: mark }));
    expect([doc.cells[0].blitz, doc.cells[2].blitz]).toEqual([mark, mark]);
    result(await ask(doc, 'replace_cell', { index: 2, source: 'df = load(3)' }));
    expect(doc.cells[2].blitz).toEqual(mark);
    const bad = await ask(doc, 'insert_cell', { index: 0, source: 'y', metadata: [1] });
    expect(bad.ok ? null : bad.error.message).toBe('metadata must be an object or null');
    expect(doc.cellCount()).toBe(4);
  });
});

describe('set_outputs', () => {
  const outputs = [
    { output_type: 'stream', name: 'stdout', text: '42\n' },
    { output_type: 'execute_result', execution_count: 7, data: { 'text/plain': '42' }, metadata: {} }
  ];

  it('puts outputs, count and metadata into the cell found by id, returning what it had', async () => {
    const doc = notebook();
    const blitz = { session: 'default', turn: 0, ran: true };
    const reply = result(await ask(doc, 'set_outputs', { id: 'load', outputs, execution_count: 7, metadata: blitz }));
    expect(reply.index).toBe(1);
    expect(reply.previous_execution_count).toBe(3);
    expect((reply.previous_outputs as unknown[]).length).toBe(3);
    expect(reply.previous_metadata).toBeNull();
    expect(doc.cells[1]).toMatchObject({ outputs, execution_count: 7, blitz });
    expect(doc.revealed).toEqual([1]);
    const read = result(await ask(doc, 'read_cells', { indices: [1], include_outputs: true }));
    expect((read.cells as { blitz?: unknown }[])[0].blitz).toEqual(blitz);
    const undone = result(await ask(doc, 'set_outputs', { id: 'load', outputs: [], execution_count: 3, metadata: null }));
    expect(undone.previous_metadata).toEqual(blitz);
    expect(doc.cells[1].blitz).toBeUndefined();
  });

  it('refuses a missing id, a markdown cell and outputs that are not nbformat', async () => {
    const doc = notebook();
    const missing = await ask(doc, 'set_outputs', { id: 'gone', outputs, execution_count: 1 });
    const markdown = await ask(doc, 'set_outputs', { id: 'intro', outputs, execution_count: 1 });
    const junk = await ask(doc, 'set_outputs', { id: 'load', outputs: ['x'], execution_count: 1 });
    expect(missing.ok ? null : missing.error.code).toBe('bad_index');
    expect(markdown.ok ? null : markdown.error.message).toBe('cell 0 is a markdown cell; only code cells have outputs');
    expect(junk.ok ? null : junk.error.code).toBe('bad_request');
    expect(doc.cells[1].execution_count).toBe(3);
  });
});

describe('failures are replies', () => {
  it('answers an unknown op with an error', async () => {
    const reply = await ask(notebook(), 'rename_notebook');
    expect(reply).toEqual({ kind: 'reply', id: 'r-1', ok: false, error: { code: 'unknown_op', message: 'unknown op "rename_notebook"' } });
  });

  it('turns an unexpected exception into an internal error', async () => {
    const doc = notebook();
    doc.deleteCell = () => {
      throw new TypeError('model is disposed');
    };
    const reply = await ask(doc, 'delete_cell', { index: 0 });
    expect(reply.ok ? null : reply.error).toEqual({ code: 'internal', message: 'TypeError: model is disposed' });
  });
});

describe('helpers', () => {
  it('recognises %%blitz prompts', () => {
    expect(isBlitzPrompt('%%blitz\nhi')).toBe(true);
    expect(isBlitzPrompt('  %%blitz --plan\nhi')).toBe(true);
    expect(isBlitzPrompt('%%blitz_btw\nwhy?')).toBe(true);
    expect(isBlitzPrompt('%%blitzkrieg')).toBe(false);
    expect(isBlitzPrompt('%blitz_model x')).toBe(false);
    expect(isBlitzPrompt('x = 1\n%%blitz')).toBe(false);
  });

  it('reads image sizes from headers and tolerates junk', () => {
    expect(imageSize(PNG_HEAD)).toEqual({ width: 3, height: 2 });
    expect(imageSize(btoa('GIF89a\x05\x00\x04\x00'))).toEqual({ width: 5, height: 4 });
    expect(imageSize('not base64 !!')).toEqual({});
    expect(summariseOutput({ output_type: 'execute_result', data: { 'text/plain': ['4', '2'] } }, false, 100)).toEqual({
      output_type: 'execute_result',
      mime_types: ['text/plain'],
      text: '42',
      images: []
    });
  });
});

describe('replies are checked before they are sent', () => {
  it('every op of a well-formed notebook answers in the shape the kernel checks', async () => {
    const doc = notebook();
    const asked: [string, Record<string, unknown> | undefined][] = [
      ['list_cells', undefined],
      ['read_cells', { indices: null, include_outputs: true, include_images: true }],
      ['insert_cell', { index: 0, source: 'x = 1' }],
      ['replace_cell', { index: 0, source: '# Title', cell_type: 'markdown' }],
      ['set_outputs', { id: 'load', outputs: [], execution_count: 1, metadata: { ran: true } }],
      ['delete_cell', { index: 0 }]
    ];
    for (const [op, params] of asked) {
      const reply = await ask(doc, op, params);
      expect([op, reply.ok, replyProblem(op, reply)]).toEqual([op, true, null]);
    }
  });

  it('names what is wrong with a malformed reply', () => {
    const ok = { kind: 'reply', id: 'r-1', ok: true };
    expect(replyProblem('list_cells', { ...ok, result: { path: 'a', cell_count: 1, cells: [{ index: 0 }] } })).toBe(
      'result.cells[0].id must be a string'
    );
    expect(replyProblem('insert_cell', { ...ok, result: { index: 0, id: 'a', cell_count: '1' } })).toBe(
      'result.cell_count must be an integer'
    );
    expect(
      replyProblem('read_cells', {
        ...ok,
        result: { path: 'a', cell_count: 1, cells: [{ index: 0, id: 'a', cell_type: 'code', source: '', execution_count: null, running: false, outputs: [{ output_type: 'clear' }] }] }
      })
    ).toBe('result.cells[0].outputs[0].output_type must be one of stream, error, execute_result, display_data');
    expect(replyProblem('delete_cell', { kind: 'reply', id: 'r-1', ok: false, error: { code: 'oops', message: 'x' } })).toBe(
      'error.code must be one of bad_request, bad_index, running_cell, unknown_op, internal'
    );
    expect(replyProblem('list_cells', { kind: 'welcome' })).toBe('a reply must be an object of kind "reply"');
  });

  it('sends a result that does not fit as an internal error saying why', async () => {
    const doc = notebook();
    doc.cell = index => ({ ...doc.cells[index], id: undefined as unknown as string });
    const reply = await ask(doc, 'list_cells');
    expect(reply.ok ? null : reply.error).toEqual({
      code: 'internal',
      message: 'the front end made a malformed list_cells result: result.cells[0].id must be a string'
    });
  });
});

describe('ask_permission and close_permission', () => {
  class ScriptedAsker implements PermissionAsker {
    asked: AskPermissionParams[] = [];
    shown = new Set<string>();
    ask(params: AskPermissionParams): Promise<AskPermissionResult> {
      this.asked.push(params);
      this.shown.add(params.question);
      return Promise.resolve({ answer: 'deny', reason: 'not now' });
    }
    close(question: string): boolean {
      return this.shown.delete(question);
    }
  }
  const params = { question: 'q-1', client: 'mcp:claude-code', calls: [{ id: 'c1', name: 'write_file', preview: '+ hi' }], timeout_s: 5 };

  it('passes the question to the asker and replies with its answer', async () => {
    const asker = new ScriptedAsker();
    const reply = await handleRequest(notebook(), { kind: 'request', id: 'r-1', op: 'ask_permission', params }, asker);
    expect(result(reply)).toEqual({ answer: 'deny', reason: 'not now' });
    expect(asker.asked).toEqual([params]);
    const closed = await handleRequest(notebook(), { kind: 'request', id: 'r-2', op: 'close_permission', params: { question: 'q-1' } }, asker);
    expect(result(closed)).toEqual({ closed: true });
  });

  it('refuses calls without a preview, and a front end with no asker', async () => {
    const asker = new ScriptedAsker();
    const bad = await handleRequest(notebook(), { kind: 'request', id: 'r-1', op: 'ask_permission', params: { ...params, calls: [{ id: 'c1' }] } }, asker);
    expect(bad.ok ? null : bad.error.code).toBe('bad_request');
    expect(asker.asked).toEqual([]);
    const none = await ask(notebook(), 'ask_permission', params);
    expect(none.ok ? null : none.error.code).toBe('unknown_op');
  });
});
