/**
 * The Blitz side panel's logic, apart from its DOM (docs/panel.md): the shapes the server
 * extension's `/blitz/panel/*` endpoints answer with, how numbers and times are shown, the
 * usage chart's geometry, the audit filter and the magic that switches a notebook's session.
 * No JupyterLab runtime import here, so vitest runs it in node.
 */

export interface UsageTotals {
  input_tokens: number;
  cached_tokens: number;
  output_tokens: number;
  cost_usd: number;
  priced: boolean;
  calls: number;
}

export interface SessionRow {
  name: string;
  turns: number;
  created: number;
  last_used: number;
  cost_usd: number;
  priced: boolean;
  input_tokens: number;
  output_tokens: number;
  held_by: string | null;
}

export interface SessionList {
  workspace: string;
  store: string | null;
  problem: string | null;
  sessions: SessionRow[];
}

export interface Part {
  text: string;
  match: boolean;
}

export interface Hit {
  session: string;
  message: number;
  turn: number;
  role: string;
  time: number;
  parts: Part[];
  compacted: boolean;
  rewound: boolean;
}

export interface SearchReply {
  query: string;
  hits: Hit[];
  problem: string | null;
}

export interface TranscriptEntry {
  role: string;
  text: string;
  compacted: boolean;
}

export interface Transcript {
  name: string;
  turns: number;
  messages: TranscriptEntry[];
}

export interface DayUsage {
  day: string;
  model: string;
  totals: UsageTotals;
}

export interface UsageReply {
  session: string | null;
  total: UsageTotals;
  by_model: { model: string; totals: UsageTotals }[];
  by_day: DayUsage[];
}

export interface BudgetReply {
  session: string;
  limit_usd: number | null;
  added_usd: number;
  spent_usd: number;
  left_usd: number | null;
  tripped: boolean;
}

export interface AuditEntry {
  turn: number;
  time: string;
  tool: string;
  decision: string;
  decided_by: string;
  status: string;
  arguments: string;
  reason: string | null;
}

export interface AuditReply {
  session: string;
  records: AuditEntry[];
  tools: string[];
  decisions: string[];
}

/** "$0.0123"; "unpriced" when a call had no price and nothing is known. */
export function formatCost(cost: number, priced = true): string {
  if (!priced && cost === 0) {
    return 'unpriced';
  }
  const shown = cost >= 1 ? `$${cost.toFixed(2)}` : `$${cost.toFixed(4)}`;
  return priced ? shown : `${shown}+`;
}

/** 950 → "950", 12_300 → "12.3k", 4_500_000 → "4.5M". */
export function formatTokens(tokens: number): string {
  if (tokens < 1000) {
    return String(tokens);
  }
  if (tokens < 1_000_000) {
    return `${trimmed(tokens / 1000)}k`;
  }
  return `${trimmed(tokens / 1_000_000)}M`;
}

function trimmed(value: number): string {
  return value >= 100 ? value.toFixed(0) : value.toFixed(1).replace(/\.0$/, '');
}

/** How long ago `seconds` (a Unix time) was, relative to `now` (also seconds). */
export function formatWhen(seconds: number, now: number): string {
  const ago = Math.max(0, now - seconds);
  if (ago < 60) {
    return 'just now';
  }
  if (ago < 3600) {
    return `${Math.floor(ago / 60)} min ago`;
  }
  if (ago < 86400) {
    return `${Math.floor(ago / 3600)} h ago`;
  }
  const days = Math.floor(ago / 86400);
  return days === 1 ? 'yesterday' : `${days} days ago`;
}

/** The budget line: "$1.20 of $5.00 spent, $3.80 left", or why there is none. */
export function budgetLine(budget: BudgetReply): string {
  if (budget.limit_usd === null) {
    return `${formatCost(budget.spent_usd)} spent, no session budget set (limits.max_cost_usd_session)`;
  }
  const whole = budget.limit_usd + budget.added_usd;
  const left = budget.left_usd ?? Math.max(0, whole - budget.spent_usd);
  const line = `${formatCost(budget.spent_usd)} of ${formatCost(whole)} spent, ${formatCost(left)} left`;
  return budget.tripped ? `${line} — budget reached: %blitz_usage --add-budget USD` : line;
}

export type Measure = 'cost' | 'tokens';

export interface Bar {
  /** What the bar stands for: a day or a model. */
  label: string;
  value: number;
  /** The bar's geometry in the chart's own units (width × height, origin top left). */
  x: number;
  y: number;
  width: number;
  height: number;
  /** The value as the bar's tooltip and its accessible name say it. */
  title: string;
}

export interface ChartLayout {
  width: number;
  height: number;
  bars: Bar[];
  /** The largest value, shown as the top of the scale. */
  top: number;
}

function measured(totals: UsageTotals, measure: Measure): number {
  return measure === 'cost' ? totals.cost_usd : totals.input_tokens + totals.output_tokens;
}

function shown(value: number, measure: Measure): string {
  return measure === 'cost' ? formatCost(value) : `${formatTokens(value)} tokens`;
}

/** Bars of `values` scaled so the largest fills `height` (a zero keeps a 1-unit stub so
 * every label still has a bar to point at); `gap` units between bars. */
export function layoutBars(
  values: { label: string; value: number }[],
  measure: Measure,
  width = 240,
  height = 80,
  gap = 4
): ChartLayout {
  const top = Math.max(0, ...values.map(item => item.value));
  const count = values.length;
  const barWidth = count === 0 ? 0 : Math.max(1, (width - gap * (count - 1)) / count);
  const bars = values.map((item, index) => {
    const tall = top === 0 ? 1 : Math.max(1, (item.value / top) * height);
    return {
      label: item.label,
      value: item.value,
      x: index * (barWidth + gap),
      y: height - tall,
      width: barWidth,
      height: tall,
      title: `${item.label}: ${shown(item.value, measure)}`
    };
  });
  return { width, height, bars, top };
}

/** What the chart shows first: tokens when nothing is priced (every cost would be $0). */
export function defaultMeasure(usage: UsageReply): Measure {
  return !usage.total.priced && usage.total.cost_usd === 0 ? 'tokens' : 'cost';
}

/** "1 turn", "3 turns". */
export function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

/** Usage summed per day (oldest first, the last `days` days that have any). */
export function perDay(usage: UsageReply, measure: Measure, days = 14): { label: string; value: number }[] {
  const sums = new Map<string, number>();
  for (const item of usage.by_day) {
    sums.set(item.day, (sums.get(item.day) ?? 0) + measured(item.totals, measure));
  }
  return [...sums.keys()]
    .sort()
    .slice(-days)
    .map(day => ({ label: day, value: sums.get(day) ?? 0 }));
}

/** Usage per model, the largest first. */
export function perModel(usage: UsageReply, measure: Measure): { label: string; value: number }[] {
  return usage.by_model
    .map(item => ({ label: item.model, value: measured(item.totals, measure) }))
    .sort((a, b) => b.value - a.value || a.label.localeCompare(b.label));
}

export interface AuditFilter {
  tool: string;
  decision: string;
}

/** The records the filter keeps ('' matches everything). */
export function filterAudit(records: AuditEntry[], filter: AuditFilter): AuditEntry[] {
  return records.filter(
    record => (!filter.tool || record.tool === filter.tool) && (!filter.decision || record.decision === filter.decision)
  );
}

/** Session names the store accepts; anything else is never sent to a kernel. */
const SESSION_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$/;

/** The magic that switches a notebook's session to `name`; an Error for a name that is not one. */
export function useSessionCode(name: string): string {
  if (!SESSION_NAME.test(name)) {
    throw new Error(`not a session name: ${JSON.stringify(name)}`);
  }
  return `%blitz_session use ${name}`;
}

/** The query string of one endpoint call, empty values left out. */
export function panelQuery(path: string, extra: Record<string, string | null | undefined> = {}): string {
  const query = new URLSearchParams({ path });
  for (const [key, value] of Object.entries(extra)) {
    if (value) {
      query.set(key, value);
    }
  }
  return query.toString();
}
