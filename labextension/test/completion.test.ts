/**
 * "Blitz" inline completion's provider (completion.ts): the debounce, superseded and aborted
 * requests, the stream mapped onto JupyterLab's ghost-text items, and the NDJSON reader. The
 * variables of an idle kernel (variables.ts) are asked once, kept until the next execution, and
 * skipped while it is busy. The server side is tested in tests/wire/test_completion_server.py, the ghost text in a real
 * JupyterLab in tests/browser/test_completion.py.
 */

import { describe, expect, it } from 'vitest';

import {
  BlitzInlineProvider,
  type CompletionChunk,
  type CompletionClient,
  type CompletionRequestBody,
  type CompletionSettings,
  ndjson,
  neighbours
} from '../src/completion';
import { MAX_VARIABLES, readVariables, VariableCache, type VariableKernel } from '../src/variables';

class FakeClient implements CompletionClient {
  sent: CompletionRequestBody[] = [];
  aborted: boolean[] = [];
  constructor(
    private readonly answer: CompletionChunk[],
    private readonly enabled = true,
    private readonly debounce = 20
  ) {}
  async settings(): Promise<CompletionSettings> {
    return { enabled: this.enabled, model: 'fake', debounce_ms: this.debounce, max_tokens: 32, reason: null };
  }
  async *stream(body: CompletionRequestBody, signal: AbortSignal): AsyncGenerator<CompletionChunk> {
    this.sent.push(body);
    const index = this.aborted.push(false) - 1;
    signal.addEventListener('abort', () => (this.aborted[index] = true));
    for (const chunk of this.answer) {
      if (signal.aborted) {
        const error = new Error('aborted');
        error.name = 'AbortError';
        throw error;
      }
      yield chunk;
    }
  }
}

const where = { path: 'work/nb.ipynb', language: 'python', before: ['import pandas as pd'], after: [] };
const context = { widget: {} as never, triggerKind: 1 };
const request = (text: string, offset = text.length) => ({ text, offset, mimeType: 'text/x-python' });

async function drain(provider: BlitzInlineProvider, token: string | undefined) {
  const seen = [];
  for await (const reply of provider.stream(token ?? '')) {
    seen.push(reply.response);
  }
  return seen;
}

describe('BlitzInlineProvider', () => {
  it('sends the code around the cursor with the neighbours and streams the text that grows', async () => {
    const client = new FakeClient([
      { kind: 'text', text: 'head(' },
      { kind: 'text', text: 'head()' },
      { kind: 'done', text: 'head()' }
    ]);
    const provider = new BlitzInlineProvider(client, () => where);
    const list = await provider.fetch(request('df.\nprint(1)', 3), context);
    expect(list.items).toHaveLength(1);
    expect(list.items[0].isIncomplete).toBe(true);
    expect(client.sent[0]).toEqual({
      path: 'work/nb.ipynb',
      prefix: 'df.',
      suffix: '\nprint(1)',
      language: 'python',
      before: ['import pandas as pd'],
      after: [],
      variables: []
    });
    const replies = await drain(provider, list.items[0].token);
    expect(replies.map(r => r.insertText)).toEqual(['head(', 'head()', 'head()']);
    expect(replies.at(-1)?.isIncomplete).toBe(false);
  });

  it('drops a request superseded while it waited: only the last keystroke reaches the server', async () => {
    const client = new FakeClient([{ kind: 'done', text: 'x' }]);
    const provider = new BlitzInlineProvider(client, () => where);
    const first = provider.fetch(request('d'), context);
    const second = provider.fetch(request('df'), context);
    expect((await first).items).toEqual([]);
    expect((await second).items).toHaveLength(1);
    expect(client.sent.map(body => body.prefix)).toEqual(['df']);
  });

  it('aborts the running request when the user types on', async () => {
    const client = new FakeClient([
      { kind: 'text', text: 'a' },
      { kind: 'done', text: 'ab' }
    ]);
    const provider = new BlitzInlineProvider(client, () => where);
    const first = await provider.fetch(request('x'), context);
    const stream = provider.stream(first.items[0].token ?? '');
    expect((await stream.next()).value?.response.insertText).toBe('a');
    await provider.fetch(request('xy'), context); // a new keystroke
    expect(client.aborted[0]).toBe(true);
    expect((await stream.next()).done).toBe(true); // the aborted stream ends quietly
  });

  it('asks nothing when completion is off or the widget is not a notebook', async () => {
    const off = new FakeClient([{ kind: 'done', text: 'x' }], false);
    expect((await new BlitzInlineProvider(off, () => where).fetch(request('a'), context)).items).toEqual([]);
    const elsewhere = new FakeClient([{ kind: 'done', text: 'x' }]);
    expect((await new BlitzInlineProvider(elsewhere, () => null).fetch(request('a'), context)).items).toEqual([]);
    expect(off.sent).toEqual([]);
    expect(elsewhere.sent).toEqual([]);
  });

  it('shows a server error on the item rather than throwing', async () => {
    const client = new FakeClient([{ kind: 'error', message: 'completion.model is not set' }]);
    const provider = new BlitzInlineProvider(client, () => where);
    const list = await provider.fetch(request('a'), context);
    const [reply] = await drain(provider, list.items[0].token);
    expect(reply.error?.message).toBe('completion.model is not set');
  });
});

class FakeKernel implements VariableKernel {
  status = 'idle';
  asked = 0;
  private listeners: (() => void)[] = [];
  constructor(private readonly reply: () => Promise<unknown>) {}
  request(): Promise<unknown> {
    this.asked += 1;
    return this.reply();
  }
  onExecution(listener: () => void): void {
    this.listeners.push(listener);
  }
  execute(): void {
    this.listeners.forEach(listener => listener());
  }
}

const reply = (...variables: [string, string][]) => ({
  kind: 'variables',
  variables: variables.map(([name, type]) => ({ name, type }))
});

describe('variables of the kernel', () => {
  it('asks an idle kernel once and keeps the answer until the kernel runs code again', async () => {
    let answer = reply(['sales', 'DataFrame']);
    const kernel = new FakeKernel(async () => answer);
    const cache = new VariableCache();
    expect(await cache.variables(kernel)).toEqual([{ name: 'sales', type: 'DataFrame' }]);
    expect(await cache.variables(kernel)).toEqual([{ name: 'sales', type: 'DataFrame' }]);
    expect(kernel.asked).toBe(1);
    answer = reply(['sales', 'DataFrame'], ['total', 'float']);
    kernel.execute();
    expect((await cache.variables(kernel)).map(v => v.name)).toEqual(['sales', 'total']);
    expect(kernel.asked).toBe(2);
  });

  it('never asks a busy kernel, and does not wait for it', async () => {
    const kernel = new FakeKernel(async () => reply(['x', 'int']));
    kernel.status = 'busy';
    const cache = new VariableCache();
    expect(await cache.variables(kernel)).toEqual([]);
    expect(kernel.asked).toBe(0);
    kernel.status = 'idle';
    expect(await cache.variables(kernel)).toEqual([{ name: 'x', type: 'int' }]);
  });

  it('goes without a slow answer, and keeps it for the next suggestion when it comes', async () => {
    let answer: (value: unknown) => void = () => undefined;
    const kernel = new FakeKernel(() => new Promise(resolve => (answer = resolve)));
    const cache = new VariableCache(10);
    expect(await cache.variables(kernel)).toEqual([]);
    answer(reply(['late', 'str']));
    expect(await cache.variables(kernel)).toEqual([{ name: 'late', type: 'str' }]);
    expect(kernel.asked).toBe(1);
  });

  it('sends none from a kernel that did not answer or answered something else', async () => {
    expect(await new VariableCache().variables(new FakeKernel(async () => null))).toEqual([]);
    expect(await new VariableCache().variables(new FakeKernel(() => Promise.reject(new Error('gone'))))).toEqual([]);
    expect(readVariables({ kind: 'welcome' })).toEqual([]);
    expect(readVariables({ kind: 'variables', variables: [{ name: 1, type: 'int' }, { name: 'ok', type: 'int' }] })).toEqual([
      { name: 'ok', type: 'int' }
    ]);
  });

  it('caps the count and the length like the server does', () => {
    const many = Array.from({ length: 150 }, (_, i): [string, string] => [`v${i}`, 'int']);
    const read = readVariables(reply(...many, ['x'.repeat(101), 'int'], ['y', 't'.repeat(500)]));
    expect(read).toHaveLength(MAX_VARIABLES);
    expect(read.at(-1)).toEqual({ name: 'y', type: 't'.repeat(100) });
    expect(read.some(v => v.name.length > 100)).toBe(false);
  });

  it('the completion request carries them', async () => {
    const client = new FakeClient([{ kind: 'done', text: '.sum()' }]);
    const kernel = new FakeKernel(async () => reply(['sales', 'DataFrame']));
    const cache = new VariableCache();
    const provider = new BlitzInlineProvider(client, () => where, () => cache.variables(kernel));
    await provider.fetch(request('sal'), context);
    await provider.fetch(request('sales'), context);
    expect(client.sent.map(body => body.variables)).toEqual([
      [{ name: 'sales', type: 'DataFrame' }],
      [{ name: 'sales', type: 'DataFrame' }]
    ]);
    expect(kernel.asked).toBe(1);
  });
});

describe('ndjson', () => {
  it('reads objects split across chunks and a last line without a newline', async () => {
    const encoder = new TextEncoder();
    const parts = ['{"kind":"te', 'xt","text":"a"}\n{"kind":"text","text":"ab"}\n', '{"kind":"done","text":"ab"}'];
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        parts.forEach(part => controller.enqueue(encoder.encode(part)));
        controller.close();
      }
    });
    const chunks = [];
    for await (const chunk of ndjson(body)) {
      chunks.push(chunk);
    }
    expect(chunks.map(c => [c.kind, c.text])).toEqual([
      ['text', 'a'],
      ['text', 'ab'],
      ['done', 'ab']
    ]);
  });
});

describe('neighbours', () => {
  it('takes the nearest eight cells each side of the active one', () => {
    const sources = Array.from({ length: 20 }, (_, i) => `cell ${i}`);
    const { before, after } = neighbours(sources, 10);
    expect(before).toEqual(sources.slice(2, 10));
    expect(after).toEqual(sources.slice(11, 19));
  });
});
