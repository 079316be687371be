/**
 * The runtime checks of the bridge's messages, typed by the types generated from the Python
 * models, and what this front end does with a message that does not fit: it is logged once
 * per kind and ignored (docs/widget.md).
 */

import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { Dropped, kindOf } from '../src/dropped';
import type { CellType, ErrorCode, ErrorReply, InsertCellResult, Op, ReadCellsResult } from '../src/generated/protocol';
import { RESULTS, type Reply, replyProblem, requestProblem } from '../src/messages';
import { receivedRequest } from '../src/protocol';

const GENERATED = join(__dirname, '..', 'src', 'generated');

describe('the generated types', () => {
  const schema = JSON.parse(readFileSync(join(GENERATED, 'protocol.schema.json'), 'utf8'));
  const types = readFileSync(join(GENERATED, 'protocol.ts'), 'utf8');

  it('export a type for every definition of the committed schema', () => {
    const exported = new Set([...types.matchAll(/^export (?:interface|type) (\w+)/gm)].map(m => m[1]));
    const missing = Object.keys(schema.$defs).filter(name => !exported.has(name));
    expect(missing).toEqual([]);
    expect(exported.has('BlitzProtocol')).toBe(true);
  });

  it('give every op of the schema a result check, and no other', () => {
    const ops: Op[] = schema.$defs.Op.enum;
    expect(Object.keys(RESULTS).sort()).toEqual([...ops].sort());
  });

  it('type what a check accepts', () => {
    const result: ReadCellsResult = {
      path: 'a.ipynb',
      cell_count: 1,
      cells: [
        {
          index: 0,
          id: 'c',
          cell_type: 'code' satisfies CellType,
          source: 'print(1)',
          execution_count: 1,
          running: false,
          outputs: [
            { output_type: 'stream', name: 'stdout', text: '1\n' },
            { output_type: 'display_data', mime_types: ['image/png'], text: '', images: [{ mime_type: 'image/png' }] }
          ]
        }
      ]
    };
    const reply: Reply = { kind: 'reply', id: 'r-1', ok: true, result };
    expect(replyProblem('read_cells', reply)).toBeNull();
    const inserted: InsertCellResult = { index: 2, id: 'n', cell_count: 3 };
    expect(RESULTS.insert_cell(inserted, 'result')).toBeNull();
    const code: ErrorCode = 'running_cell';
    const refused: ErrorReply = { kind: 'reply', id: 'r-2', ok: false, error: { code, message: 'busy' } };
    expect(replyProblem('delete_cell', refused)).toBeNull();
  });

  it('check what does not fit, naming where', () => {
    const bad = { kind: 'reply', id: 'r-1', ok: true, result: { path: 'a', cell_count: 1, cells: [{ index: 0 }] } };
    expect(replyProblem('read_cells', bad)).toBe('result.cells[0].id must be a string');
    expect(
      replyProblem('read_cells', {
        ...bad,
        result: { path: 'a', cell_count: 0, cells: [{ ...cell(), outputs: [{ output_type: 'weird' }] }] }
      })
    ).toBe('result.cells[0].outputs[0].output_type must be one of stream, error, execute_result, display_data');
    expect(
      replyProblem('read_cells', {
        ...bad,
        result: { path: 'a', cell_count: 0, cells: [{ ...cell(), outputs: [{ output_type: 'stream', name: 1 }] }] }
      })
    ).toBe('result.cells[0].outputs[0].name must be a string');
  });
});

function cell() {
  return { index: 0, id: 'c', cell_type: 'code', source: '', execution_count: null, running: false };
}

describe('a request from the kernel', () => {
  it('fits, with or without params, and with an op this front end does not know', () => {
    expect(requestProblem({ kind: 'request', id: 'r-1', op: 'list_cells', params: {} })).toBeNull();
    expect(requestProblem({ kind: 'request', id: 'r-1', op: 'list_cells' })).toBeNull();
    expect(requestProblem({ kind: 'request', id: 'r-1', op: 'from_the_future', params: {} })).toBeNull();
  });

  it('does not fit when its envelope is wrong', () => {
    expect(requestProblem({ kind: 'request', op: 'list_cells' })).toBe('request.id must be a string');
    expect(requestProblem({ kind: 'request', id: 'r', op: 'list_cells', params: [] })).toBe(
      'request.params must be an object'
    );
    expect(requestProblem('hello')).toBe('request must be an object');
  });
});

describe('a message that does not fit', () => {
  const logger = () => {
    const lines: string[] = [];
    return { lines, dropped: new Dropped('the blitz notebook bridge', line => lines.push(line)) };
  };

  it('is ignored and logged once per kind, never thrown', () => {
    const { lines, dropped } = logger();
    expect(receivedRequest({ kind: 'request', op: 'list_cells' }, dropped)).toBeNull();
    expect(receivedRequest({ kind: 'request', id: 7, op: 'list_cells' }, dropped)).toBeNull();
    expect(receivedRequest({ kind: 'gossip' }, dropped)).toBeNull();
    expect(receivedRequest(null, dropped)).toBeNull();
    expect(receivedRequest(['x'], dropped)).toBeNull();
    expect(lines).toEqual([
      'the blitz notebook bridge ignored a request message it cannot use (request.id must be a string); further ones of this kind are ignored silently',
      'the blitz notebook bridge ignored a gossip message it cannot use (request.kind must be "request"); further ones of this kind are ignored silently',
      'the blitz notebook bridge ignored a (null) message it cannot use (request must be an object); further ones of this kind are ignored silently',
      'the blitz notebook bridge ignored a (list) message it cannot use (request must be an object); further ones of this kind are ignored silently'
    ]);
  });

  it('is not the kernel welcome, which is neither answered nor logged', () => {
    const { lines, dropped } = logger();
    expect(receivedRequest({ kind: 'welcome', protocol: 1 }, dropped)).toBeNull();
    expect(lines).toEqual([]);
  });

  it('leaves a good request through', () => {
    const { lines, dropped } = logger();
    const request = { kind: 'request', id: 'r-1', op: 'list_cells', params: {} };
    expect(receivedRequest(request, dropped)).toBe(request);
    expect(lines).toEqual([]);
  });

  it('is named by its kind', () => {
    expect([kindOf({ kind: 'x' }), kindOf({}), kindOf(3), kindOf(undefined)]).toEqual([
      'x',
      '(no kind)',
      '(number)',
      '(undefined)'
    ]);
  });
});
