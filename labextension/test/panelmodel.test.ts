/**
 * The Blitz side panel's logic (panelmodel.ts): formatting, the chart's scaling, per-day and
 * per-model series, the audit filter and the session-switching magic. The endpoints are
 * tested in tests/unit/test_panel_server.py and tests/wire/test_panel_server.py, the panel
 * itself in a real JupyterLab in tests/browser/test_side_panel.py.
 */

import { describe, expect, it } from 'vitest';

import {
  type AuditEntry,
  budgetLine,
  defaultMeasure,
  filterAudit,
  formatCost,
  formatTokens,
  formatWhen,
  layoutBars,
  panelQuery,
  perDay,
  perModel,
  type UsageReply,
  type UsageTotals,
  useSessionCode
} from '../src/panelmodel';

function totals(cost: number, input: number, output: number): UsageTotals {
  return { input_tokens: input, cached_tokens: 0, output_tokens: output, cost_usd: cost, priced: true, calls: 1 };
}

const usage: UsageReply = {
  session: null,
  total: totals(0.6, 300, 30),
  by_model: [
    { model: 'small', totals: totals(0.1, 100, 10) },
    { model: 'large', totals: totals(0.5, 200, 20) }
  ],
  by_day: [
    { day: '2026-03-03', model: 'small', totals: totals(0.1, 100, 10) },
    { day: '2026-03-02', model: 'large', totals: totals(0.2, 50, 5) },
    { day: '2026-03-03', model: 'large', totals: totals(0.3, 150, 15) }
  ]
};

describe('formatting', () => {
  it('shows costs, tokens and times the way a person reads them', () => {
    expect(formatCost(0.01234)).toBe('$0.0123');
    expect(formatCost(12.5)).toBe('$12.50');
    expect(formatCost(0, false)).toBe('unpriced');
    expect(formatCost(0.5, false)).toBe('$0.5000+');
    expect(formatTokens(950)).toBe('950');
    expect(formatTokens(12_300)).toBe('12.3k');
    expect(formatTokens(4_500_000)).toBe('4.5M');
    expect(formatWhen(1000, 1030)).toBe('just now');
    expect(formatWhen(1000, 1000 + 5 * 60)).toBe('5 min ago');
    expect(formatWhen(0, 86400 * 3)).toBe('3 days ago');
  });

  it('says what is left of the budget, and how to add to one that is spent', () => {
    const base = { session: 's', added_usd: 1, spent_usd: 1.2, tripped: false };
    expect(budgetLine({ ...base, limit_usd: 4, left_usd: 3.8 })).toBe('$1.20 of $5.00 spent, $3.80 left');
    expect(budgetLine({ ...base, limit_usd: null, left_usd: null })).toContain('no session budget set');
    expect(budgetLine({ ...base, limit_usd: 0.2, left_usd: 0, tripped: true })).toContain('--add-budget');
  });
});

describe('the usage chart', () => {
  it('scales the largest bar to the full height and keeps a stub for zero', () => {
    const layout = layoutBars(
      [
        { label: 'a', value: 2 },
        { label: 'b', value: 1 },
        { label: 'c', value: 0 }
      ],
      'cost',
      100,
      50,
      5
    );
    expect(layout.top).toBe(2);
    expect(layout.bars.map(bar => bar.height)).toEqual([50, 25, 1]);
    expect(layout.bars.map(bar => bar.y)).toEqual([0, 25, 49]);
    expect(layout.bars[1].x).toBeCloseTo(35); // one bar and one gap along
    expect(layout.bars[0].width).toBeCloseTo(30);
    expect(layout.bars[0].title).toBe('a: $2.00');
    expect(layoutBars([], 'tokens').bars).toEqual([]);
  });

  it('sums per day oldest first and per model largest first', () => {
    expect(perDay(usage, 'cost').map(item => [item.label, Number(item.value.toFixed(4))])).toEqual([
      ['2026-03-02', 0.2],
      ['2026-03-03', 0.4]
    ]);
    expect(perDay(usage, 'tokens')).toEqual([
      { label: '2026-03-02', value: 55 },
      { label: '2026-03-03', value: 275 }
    ]);
    expect(perDay(usage, 'cost', 1).map(item => item.label)).toEqual(['2026-03-03']);
    expect(perModel(usage, 'tokens').map(item => item.label)).toEqual(['large', 'small']);
  });

  it('shows tokens first when nothing is priced', () => {
    expect(defaultMeasure(usage)).toBe('cost');
    expect(defaultMeasure({ ...usage, total: { ...totals(0, 10, 1), priced: false } })).toBe('tokens');
    expect(defaultMeasure({ ...usage, total: { ...totals(0.2, 10, 1), priced: false } })).toBe('cost');
  });
});

describe('the audit filter', () => {
  const record = (tool: string, decision: string): AuditEntry => ({
    turn: 0,
    time: '',
    tool,
    decision,
    decided_by: 'policy',
    status: 'ok',
    arguments: '{}',
    reason: null
  });
  const records = [record('read_file', 'allowed'), record('run_python', 'denied'), record('read_file', 'denied')];

  it('keeps what matches the tool and the decision, everything when both are empty', () => {
    expect(filterAudit(records, { tool: '', decision: '' })).toHaveLength(3);
    expect(filterAudit(records, { tool: 'read_file', decision: '' })).toHaveLength(2);
    expect(filterAudit(records, { tool: 'read_file', decision: 'denied' })).toEqual([records[2]]);
    expect(filterAudit(records, { tool: '', decision: 'blocked' })).toEqual([]);
  });
});

describe('switching the session and asking the server', () => {
  it('writes the magic for a session name and refuses anything else', () => {
    expect(useSessionCode('analysis-2')).toBe('%blitz_session use analysis-2');
    expect(() => useSessionCode('x; import os')).toThrow(/not a session name/);
    expect(() => useSessionCode('a\nb')).toThrow(/not a session name/);
  });

  it('encodes the query and leaves out what is empty', () => {
    expect(panelQuery('dir/my nb.ipynb', { q: 'a&b', session: null, tool: '' })).toBe(
      'path=dir%2Fmy+nb.ipynb&q=a%26b'
    );
  });
});
