// @vitest-environment jsdom
/**
 * The turn widget rendered into a DOM (jsdom) from the state the kernel syncs, with no kernel
 * and no browser: each part of a turn (streamed answer, tool cards in every status, the
 * approval card and its diff, plans, asides, errors, the footer and the controls), and the
 * commands its buttons and boxes send.
 */

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import type { PendingCallEntry, TurnWidgetState } from '../src/generated/protocol';
import turn, { renderMarkdown } from '../widget/src/turn';
import { FOOTER, HEADER, MemoryModel, every, first, press, tool, turnState } from './widgetmodel';

let el: HTMLElement;
let cleanup: (() => void) | null = null;

function render(overrides: Partial<TurnWidgetState> = {}): MemoryModel<TurnWidgetState> {
  const model = new MemoryModel(turnState(overrides));
  cleanup = turn.render({ model, el });
  return model;
}

const $ = (selector: string): HTMLElement => first(el, selector);

const $$ = (selector: string): HTMLElement[] => every(el, selector);

function button(label: string, within: ParentNode = el): HTMLButtonElement {
  const found = Array.from(within.querySelectorAll('button')).filter(node => node.textContent === label);
  expect(found, `one button "${label}"`).toHaveLength(1);
  return found[0];
}

function call(overrides: Partial<PendingCallEntry> = {}): PendingCallEntry {
  return {
    id: 'c1',
    name: 'write_file',
    args: { path: 'calc.py' },
    decision: null,
    reason: null,
    preview: null,
    preview_kind: '',
    ...overrides
  };
}

beforeEach(() => {
  el = document.createElement('div');
  document.body.replaceChildren(el);
});

afterEach(() => {
  cleanup?.();
  cleanup = null;
  vi.useRealTimers();
});

describe('the turn widget', () => {
  it('says it is ready, stamped with its turn, and its clean-up unsubscribes everything', () => {
    const model = render();
    expect(model.sent).toEqual([{ kind: 'ready', turn_id: 't1' }]);
    expect(model.subscribed()).toBeGreaterThan(0);
    cleanup?.();
    cleanup = null;
    expect(model.subscribed()).toBe(0);
  });

  it('shows the prompt, or the carry-out label, and the attachment chips', () => {
    const model = render({
      header: { ...HEADER, attachments: [{ kind: 'variable', name: 'df', size: 10, label: '@df DataFrame 7×3' }] }
    });
    expect($('.blitz-prompt').textContent).toBe('PromptSummarise sales.csv');
    const chip = $('.blitz-chips .blitz-chip.blitz-chip-variable');
    expect(chip.getAttribute('role')).toBe('listitem');
    expect(chip.title).toBe('@df (variable)');
    expect(chip.textContent).toBe('@df DataFrame 7×3');
    model.set('header', { ...HEADER, label: 'Carrying out the approved plan' });
    expect($('.blitz-prompt .blitz-carry-out').textContent).toBe('Carrying out the approved plan');
    expect($$('.blitz-chip')).toHaveLength(0);
  });

  it('streams the answer as Markdown, thinking folded, and moves it into the items', () => {
    const model = render();
    model.set('live', { text: '# Sales\nUp **12 %**, see `total`', thought: 'adding up' });
    expect($('.blitz-live details.blitz-thought summary').textContent).toBe('Thinking…');
    expect($('.blitz-live details.blitz-thought').hasAttribute('open')).toBe(false);
    expect($('.blitz-live .blitz-md h3').textContent).toBe('Sales');
    expect($('.blitz-live .blitz-md strong').textContent).toBe('12 %');
    expect($('.blitz-live .blitz-md code').textContent).toBe('total');
    model.set('live', { text: 'Up 12 %, and a block still streaming:\n```python\nx = 1', thought: '' });
    expect($('.blitz-live pre.blitz-code[data-lang="python"] code').textContent).toBe('x = 1');
    model.set('items', [
      { kind: 'thought', text: 'adding up' },
      { kind: 'text', text: 'Up 12 %.' }
    ]);
    model.set('live', { text: '', thought: '' });
    expect($('.blitz-live').childNodes).toHaveLength(0);
    expect($('.blitz-body details.blitz-thought summary').textContent).toBe('Thinking');
    expect($('.blitz-body > .blitz-md p').textContent).toBe('Up 12 %.');
  });

  it('keeps model text as text: no tag, script or unsafe link reaches the page', () => {
    render({ items: [{ kind: 'text', text: '<img src=x onerror=alert(1)> [x](javascript:alert(1)) [ok](https://a.example)' }] });
    expect($$('.blitz-body img')).toHaveLength(0);
    expect($('.blitz-body p').textContent).toContain('<img src=x onerror=alert(1)>');
    const links = $$('.blitz-body a');
    expect(links.map(link => link.getAttribute('href'))).toEqual(['https://a.example']);
    expect(links[0].getAttribute('rel')).toBe('noopener noreferrer');
    expect(renderMarkdown('| a | b |\n|---|---|\n| 1 | 2 |').querySelectorAll('tbody td')).toHaveLength(2);
  });
});

describe('tool cards', () => {
  const marks: [ToolItemStatus, string][] = [
    ['queued', 'queued'],
    ['waiting', 'waiting for approval'],
    ['running', 'running'],
    ['done', 'done'],
    ['error', 'error'],
    ['denied', 'denied'],
    ['cancelled', 'cancelled'],
    ['blocked', 'blocked']
  ];
  type ToolItemStatus = ReturnType<typeof tool>['status'];

  it.each(marks)('a %s call is marked "%s"', (status, mark) => {
    vi.useFakeTimers({ now: 3_500 });
    render({ items: [tool({ status, ended_ms: status === 'running' ? null : 3_000 })] });
    const card = $('details.blitz-tool');
    expect(card.className).toBe(`blitz-tool blitz-tool-${status}`);
    expect(card.dataset.toolId).toBe('c1');
    expect($('summary .blitz-status').textContent).toBe(mark);
    expect($('summary .blitz-tool-name').textContent).toBe('read_file');
    expect($('summary .blitz-args').textContent).toBe('(path="sales.csv")');
    // no elapsed time before a call starts; a running one counts up to now
    const elapsed = $('summary .blitz-elapsed').textContent;
    if (status === 'queued' || status === 'waiting') {
      expect(elapsed).toBe('');
    } else {
      expect(elapsed).toBe(status === 'running' ? '2.5 s' : '2.0 s');
    }
  });

  it('ticks a running call in the browser and stops once it ended', () => {
    vi.useFakeTimers({ now: 2_000 });
    const model = render({ items: [tool()] });
    expect($('.blitz-elapsed').textContent).toBe('1.0 s');
    vi.advanceTimersByTime(1_000);
    expect($('.blitz-elapsed').textContent).toBe('2.0 s');
    model.set('items', [tool({ status: 'done', ended_ms: 2_500, preview: '7 rows' })]);
    vi.advanceTimersByTime(1_000);
    expect($('.blitz-elapsed').textContent).toBe('1.5 s');
  });

  it('shows the arguments and the result, error or the hook that blocked it', () => {
    const model = render({ items: [tool({ status: 'done', ended_ms: 2_000, preview: 'a,b\n1,2' })] });
    const labels = (): string[] => $$('.blitz-tool-body .blitz-label').map(node => node.textContent || '');
    expect(labels()).toEqual(['arguments', 'result']);
    expect($('.blitz-tool-body pre.blitz-code code').textContent).toBe('{\n  "path": "sales.csv"\n}');
    expect($('pre.blitz-result code').textContent).toBe('a,b\n1,2');
    model.set('items', [tool({ status: 'error', ended_ms: 2_000, error: 'FileNotFoundError: sales.csv' })]);
    expect(labels()).toEqual(['arguments', 'error']);
    expect($('pre.blitz-result code').textContent).toBe('FileNotFoundError: sales.csv');
    model.set('items', [tool({ status: 'blocked', ended_ms: 2_000, error: 'no writes on Fridays' })]);
    expect(labels()).toEqual(['arguments', 'blocked']);
  });

  it('keeps a card open or closed across redraws as the user left it', () => {
    const model = render({ items: [tool()] });
    const card = $('details.blitz-tool') as HTMLDetailsElement;
    expect(card.open).toBe(false);
    card.open = true;
    card.dispatchEvent(new Event('toggle'));
    model.set('items', [tool({ status: 'done', ended_ms: 2_000 })]);
    expect(($('details.blitz-tool') as HTMLDetailsElement).open).toBe(true);
  });

  it('opens a running sub-agent once and nests its turn, cards keyed by their path', () => {
    const subagent = tool({
      id: 'c2',
      name: 'invoke_agent',
      args: { agent: 'reviewer' },
      presentation: { streams_subagent: true },
      nested: [
        { kind: 'text', text: 'Looking.' },
        tool({ id: 'c1', status: 'done', ended_ms: 2_000 })
      ]
    });
    render({ items: [subagent] });
    const card = $('details.blitz-tool[data-tool-id="c2"]') as HTMLDetailsElement;
    expect(card.open).toBe(true);
    const nested = $('.blitz-nested');
    expect(nested.getAttribute('role')).toBe('group');
    expect(nested.getAttribute('aria-label')).toBe('reviewer turn');
    expect($('.blitz-nested > .blitz-label').textContent).toBe('reviewer');
    expect($('.blitz-nested details.blitz-tool').dataset.toolId).toBe('c2/c1');
  });

  it('shows a plan waiting for review as such, and an answered one only as its plan', () => {
    const plan = tool({ name: 'exit_plan_mode', presentation: { plan_review: true }, status: 'waiting' });
    const model = render({ items: [plan] });
    expect($('.blitz-status').textContent).toBe('waiting for review');
    model.set('items', [
      { ...plan, status: 'done', ended_ms: 2_000 },
      { kind: 'plan', plan: '1. read\n2. write', status: 'approved', reason: null, heading: 'Plan (approved)' }
    ]);
    expect($$('details.blitz-tool')).toHaveLength(0);
    expect($('.blitz-plan.blitz-plan-approved .blitz-label').textContent).toBe('Plan (approved)');
    expect($$('.blitz-plan ol li').map(li => li.textContent)).toEqual(['read', 'write']);
  });

  it('shows the images a call showed, once decoded, and counts the ones left out', () => {
    const model = render({
      items: [tool({ name: 'run_python', status: 'done', ended_ms: 2_000, images: 1, images_omitted: 2 })],
      images: {
        c1: [
          { media_type: 'image/png', data: 'iVBORw0KGgo=' },
          { media_type: 'text/html', data: 'PGI+' }
        ]
      }
    });
    const images = $$('img.blitz-tool-image') as HTMLImageElement[];
    expect(images.map(image => image.getAttribute('src'))).toEqual(['data:image/png;base64,iVBORw0KGgo=']);
    expect(images[0].alt).toBe('image 1 of 2 from run_python');
    expect($('.blitz-tool-images .blitz-note').textContent).toBe('2 more images not shown');
    expect(($('details.blitz-tool') as HTMLDetailsElement).open).toBe(true);
    model.set('items', [...(model.get('items') || [])]);
    expect(el.querySelector('img.blitz-tool-image')).toBe(images[0]);
  });
});

describe('the approval card', () => {
  const diff = '--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-rate = 1\n+rate = 2  # <b>raised</b>\n';

  function pending(calls: PendingCallEntry[], extra: Partial<{ agent: string | null; waiting: number }> = {}) {
    return { request_id: 'r1', calls, agent: null, scope: [], waiting: 0, ...extra };
  }

  it('shows a diff with its lines marked, why the call asks, and labelled buttons and reason box', () => {
    render({
      pending: pending([call({ preview: diff, preview_kind: 'diff', reason: 'writes a file' })], { waiting: 1 })
    });
    const card = $('.blitz-permission');
    expect(card.getAttribute('role')).toBe('group');
    expect(card.getAttribute('aria-label')).toBe('Permission request');
    expect($('.blitz-permission > .blitz-label').textContent).toBe('Permission needed');
    expect($('.blitz-permission > .blitz-note').textContent).toBe('1 more request waiting');
    expect($('.blitz-call').getAttribute('aria-label')).toBe('write_file call');
    expect($('.blitz-ask-reason').textContent).toBe('why it asks: writes a file');
    expect($('.blitz-call .blitz-label').textContent).toBe('diff · 5 lines');
    const pre = $('pre.blitz-preview.blitz-preview-diff');
    expect(pre.getAttribute('aria-label')).toBe('diff of write_file');
    expect($$('.blitz-diff-line').map(line => line.className)).toEqual([
      'blitz-diff-line blitz-diff-file',
      'blitz-diff-line blitz-diff-file',
      'blitz-diff-line blitz-diff-hunk',
      'blitz-diff-line blitz-diff-del',
      'blitz-diff-line blitz-diff-add'
    ]);
    expect($('.blitz-diff-add').textContent).toBe('+rate = 2  # <b>raised</b>\n');
    expect($$('.blitz-diff-add b')).toHaveLength(0);
    for (const label of ['Allow once', 'Always allow', 'Deny']) {
      const control = button(label, card);
      expect(control.type).toBe('button'); // a real button: Tab reaches it, Enter and Space press it
      expect(control.disabled).toBe(false);
    }
    expect(button('Allow once').className).toBe('blitz-allow');
    expect(button('Deny').className).toBe('blitz-deny');
    expect(button('Always allow').title).toBe('Allow this tool for the rest of the session');
    expect($('input.blitz-reason').getAttribute('aria-label')).toBe('Reason for denying write_file (optional)');
  });

  it.each([
    ['Allow once', 'allow', null],
    ['Always allow', 'always', null],
    ['Deny', 'deny', 'not that file']
  ])('%s sends the decision for that call', (label, decision, reason) => {
    const model = render({ pending: pending([call(), call({ id: 'c2', name: 'run_python' })]) });
    const first = $$('.blitz-call')[0];
    (first.querySelector('input.blitz-reason') as HTMLInputElement).value = 'not that file';
    button(label, first).click();
    expect(model.sent.slice(1)).toEqual([
      { kind: 'decide', request_id: 'r1', call_id: 'c1', decision, reason, turn_id: 't1' }
    ]);
  });

  it('names the sub-agent that asks, shows a decided call without buttons and folds a long preview', () => {
    const long = Array.from({ length: 40 }, (_, i) => `line ${i}`).join('\n');
    render({
      pending: pending(
        [
          call({ decision: 'allow' }),
          call({ id: 'c2', name: 'run_python', preview: long, preview_kind: 'code' })
        ],
        { agent: 'reviewer' }
      )
    });
    expect($('.blitz-permission > .blitz-label').textContent).toBe('reviewer asks to run write_file, run_python');
    const [decided, open] = $$('.blitz-call');
    expect(decided.querySelector('.blitz-status')?.textContent).toBe('allowed');
    expect(decided.querySelectorAll('button')).toHaveLength(0);
    expect(decided.querySelector('pre.blitz-code code')?.textContent).toBe('{\n  "path": "calc.py"\n}');
    expect(open.querySelector('details.blitz-preview-fold summary')?.textContent).toBe('code · 40 lines (folded)');
    expect(open.querySelectorAll('button')).toHaveLength(3);
  });

  it('goes away when the request is answered', () => {
    const model = render({ pending: pending([call()]) });
    model.set('pending', {});
    expect($('.blitz-permission-slot').childNodes).toHaveLength(0);
  });
});

describe('plans', () => {
  it('Approve plan and Reject send the review, with the reason on Reject, and disable both', () => {
    const model = render({ review: { review_id: 3, plan: '1. read\n2. write' } });
    const card = $('.blitz-review');
    expect(card.getAttribute('aria-label')).toBe('Plan review');
    expect($('.blitz-review > .blitz-label').textContent).toBe('Proposed plan — approve it to carry it out');
    ($('input.blitz-reason') as HTMLInputElement).value = 'use pandas';
    button('Reject').click();
    expect(model.sent.slice(1)).toEqual([
      { kind: 'review', review_id: 3, approved: false, reason: 'use pandas', turn_id: 't1' }
    ]);
    expect(button('Approve plan').disabled).toBe(true);
    expect(button('Reject').disabled).toBe(true);
    model.set('review', { review_id: 4, plan: 'again' });
    button('Approve plan').click();
    expect(model.sent.slice(2)).toEqual([{ kind: 'review', review_id: 4, approved: true, reason: null, turn_id: 't1' }]);
  });

  it('Enter in the reason box rejects, only with a reason typed', () => {
    const model = render({ review: { review_id: 3, plan: 'p' } });
    const box = $('input.blitz-reason') as HTMLInputElement;
    expect(box.getAttribute('aria-label')).toBe('Reason for rejecting');
    expect(press(box, 'Enter').defaultPrevented).toBe(false);
    box.value = 'smaller steps';
    expect(press(box, 'Enter', { isComposing: true }).defaultPrevented).toBe(false);
    expect(model.sent).toHaveLength(1);
    expect(press(box, 'Enter').defaultPrevented).toBe(true);
    expect(model.sent.slice(1)).toEqual([
      { kind: 'review', review_id: 3, approved: false, reason: 'smaller steps', turn_id: 't1' }
    ]);
  });

  it('shows a rejected plan with its reason', () => {
    render({
      items: [{ kind: 'plan', plan: 'p', status: 'rejected', reason: null, heading: 'Plan (rejected)' }]
    });
    expect($('.blitz-plan.blitz-plan-rejected .blitz-plan-reason').textContent).toBe('no reason given');
  });
});

describe('the step limit offer', () => {
  it('Continue and End turn send the answer and disable both', () => {
    const model = render({ offer: { offer_id: 2, steps: 20, line: 'Stopped at 20 steps.' } });
    expect($('.blitz-offer').getAttribute('aria-label')).toBe('Step limit reached');
    expect($('.blitz-offer .blitz-note').textContent).toBe('Stopped at 20 steps.');
    button('End turn').click();
    expect(model.sent.slice(1)).toEqual([{ kind: 'continue', offer_id: 2, go: false, turn_id: 't1' }]);
    expect(button('Continue').disabled).toBe(true);
  });
});

describe('steering, asides, notices and errors', () => {
  it('Enter sends a steer message and an aside (trimmed, the box emptied); Shift+Enter and empty boxes do not', () => {
    const model = render();
    const steer = $('input.blitz-steer') as HTMLInputElement;
    const aside = $('input.blitz-aside') as HTMLInputElement;
    expect(steer.getAttribute('aria-label')).toBe('Steer the agent');
    expect(aside.getAttribute('aria-label')).toBe('Ask aside');
    steer.value = '  use the 2024 file  ';
    press(steer, 'Enter', { shiftKey: true });
    expect(model.sent).toHaveLength(1);
    press(steer, 'Enter');
    expect(steer.value).toBe('');
    press(steer, 'Enter');
    aside.value = 'what is a CSV?';
    press(aside, 'Enter');
    expect(model.sent.slice(1)).toEqual([
      { kind: 'steer', text: 'use the 2024 file', turn_id: 't1' },
      { kind: 'aside', question: 'what is a CSV?', turn_id: 't1' }
    ]);
  });

  it('lists steer messages with what became of them', () => {
    render({
      steers: [
        { id: 1, text: 'faster', status: 'queued', detail: '' },
        { id: 2, text: 'stop there', status: 'dropped', detail: '(the turn was stopped)' }
      ]
    });
    expect($$('.blitz-steers li').map(li => [li.className, li.textContent])).toEqual([
      ['blitz-steer-queued', '↪ faster queued: rides on the next tool result'],
      ['blitz-steer-dropped', '↪ stop there dropped (the turn was stopped)']
    ]);
  });

  it('shows each aside: thinking, answered as Markdown, cancelled as a note, failed as an error', () => {
    render({
      asides: [
        { id: 1, question: 'why?', status: 'thinking', answer: '', error: null },
        { id: 2, question: 'what?', status: 'answered', answer: 'A **CSV**.', error: null },
        { id: 3, question: 'who?', status: 'cancelled', answer: '', error: 'cancelled with the turn' },
        { id: 4, question: 'how?', status: 'failed', answer: '', error: 'RateLimitError' }
      ]
    });
    const entries = $$('.blitz-aside-entry');
    expect(entries.map(entry => entry.getAttribute('role'))).toEqual(['note', 'note', 'note', 'note']);
    expect(entries[0].querySelector('.blitz-label')?.textContent).toBe('Aside (not recorded)');
    expect(entries[0].querySelector('.blitz-note')?.textContent).toBe('thinking…');
    expect(entries[1].querySelector('.blitz-md strong')?.textContent).toBe('CSV');
    expect(entries[1].querySelector('.blitz-note')).toBeNull();
    expect(entries[2].querySelector('.blitz-note')?.textContent).toBe('cancelled with the turn');
    expect(entries[3].querySelector('.blitz-error')?.textContent).toBe('RateLimitError');
  });

  it('shows notices one a line and the error that stopped the turn as an alert', () => {
    const model = render({ notice: 'workspace not trusted\nmodel unpriced' });
    expect($$('.blitz-notice').map(note => note.textContent)).toEqual(['⚠ workspace not trusted', '⚠ model unpriced']);
    model.set('items', [{ kind: 'error', message: 'AuthenticationError: bad key' }]);
    const error = $('.blitz-body .blitz-error');
    expect(error.getAttribute('role')).toBe('alert');
    expect(error.textContent).toBe('Stopped: AuthenticationError: bad key');
  });

  it('shows a compaction note', () => {
    render({
      items: [{ kind: 'compaction', covered_events: 9, tokens_before: 9000, tokens_after: 900, line: 'Compacted 9 events' }]
    });
    expect($('.blitz-body .blitz-note').textContent).toBe('Compacted 9 events');
  });
});

describe('the footer and Stop', () => {
  it('counts tokens, cost and elapsed time while running, and shows the final figures', () => {
    vi.useFakeTimers({ now: 3_500 });
    const model = render();
    expect($('.blitz-footer').textContent).toBe('openai/fake-model · 0 in · 0 out · unpriced · 2.5 s · running');
    vi.advanceTimersByTime(500);
    expect($('.blitz-footer').textContent).toContain('· 3.0 s ·');
    model.set('footer', {
      ...FOOTER,
      model: 'openai/fallback',
      input_tokens: 1200,
      cached_tokens: 1000,
      output_tokens: 30,
      cost: '$0.0012',
      saving: 'saved $0.0009 by caching',
      elapsed_s: 4.2,
      stop_reason: 'end_turn',
      context: 'ctx 42 % of 128K',
      switches: ['fell back to openai/fallback']
    });
    model.set('phase', 'done');
    expect($('.blitz-footer').textContent).toBe(
      `openai/fallback · ${(1200).toLocaleString()} in (${(1000).toLocaleString()} cached) · 30 out · $0.0012 · ` +
        'saved $0.0009 by caching · 4.2 s · end_turn · ctx 42 % of 128K · fell back to openai/fallback'
    );
  });

  it('says what the turn does while it finishes side questions, or what it is starting', () => {
    const model = render({ phase: 'finishing' });
    expect($('.blitz-footer').textContent).toMatch(/ · finishing side questions$/);
    model.set('footer', { ...FOOTER, progress: 'starting MCP server docs…' });
    expect($('.blitz-footer').textContent).toMatch(/ · starting MCP server docs…$/);
  });

  it('Stop sends stop; the hint says how it stops; controls are off when not running and gone when done', () => {
    const model = render();
    const stop = button('Stop');
    expect(stop.title).toBe('Stop after this step; press again to stop now');
    stop.click();
    expect(model.sent.slice(1)).toEqual([{ kind: 'stop', turn_id: 't1' }]);
    model.set('stopping', 'graceful');
    expect($('.blitz-hint').textContent).toBe('stopping after this step; press Stop again to stop now');
    expect(stop.disabled).toBe(false);
    model.set('stopping', 'force');
    expect($('.blitz-hint').textContent).toBe('stopping now');
    expect(stop.disabled).toBe(true);
    model.set('phase', 'finishing');
    expect(($('input.blitz-steer') as HTMLInputElement).disabled).toBe(true);
    expect(($('input.blitz-aside') as HTMLInputElement).disabled).toBe(true);
    expect($('.blitz-controls').hidden).toBe(false);
    model.set('phase', 'done');
    expect($('.blitz-controls').hidden).toBe(true);
  });
});

describe('accessibility', () => {
  it('every control is a real button with a name or a labelled text box, and nothing else takes focus', () => {
    render({
      items: [tool({ status: 'waiting' })],
      pending: { request_id: 'r1', calls: [call()], agent: null, scope: [], waiting: 0 },
      review: { review_id: 1, plan: 'p' },
      offer: { offer_id: 1, steps: 5, line: 'Stopped at 5 steps.' }
    });
    const buttons = $$('button') as HTMLButtonElement[];
    expect(buttons.map(node => node.textContent)).toEqual([
      'Allow once',
      'Always allow',
      'Deny',
      'Approve plan',
      'Reject',
      'Continue',
      'End turn',
      'Stop'
    ]);
    expect(buttons.every(node => node.type === 'button')).toBe(true);
    const boxes = $$('input') as HTMLInputElement[];
    expect(boxes.map(node => node.getAttribute('aria-label'))).toEqual([
      'Reason for denying write_file (optional)',
      'Reason for rejecting',
      'Steer the agent',
      'Ask aside'
    ]);
    expect($$('[tabindex]')).toEqual([]); // focus follows the document's order: cards, then the controls
    for (const group of $$('[role="group"]')) {
      expect(group.getAttribute('aria-label')).toBeTruthy();
    }
  });
});
