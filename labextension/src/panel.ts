/**
 * The Blitz side panel (docs/panel.md): the sessions of the current notebook's folder with
 * search across them, a session's transcript, budget and audit trail, "Use in this notebook",
 * and a chart of cost and tokens per day and per model. Everything comes from the server
 * extension's `/blitz/panel/*` endpoints, so it works with no kernel running; only "Use in
 * this notebook" needs the notebook's kernel, and runs the magic there silently.
 *
 * Plain DOM and SVG: every control is a native button, input or select with a label, so the
 * panel is reachable by keyboard and read by screen readers.
 */

import type { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { ServerConnection } from '@jupyterlab/services';
import { Widget } from '@lumino/widgets';

import {
  type AuditReply,
  type BudgetReply,
  budgetLine,
  filterAudit,
  formatCost,
  formatTokens,
  formatWhen,
  layoutBars,
  type Measure,
  defaultMeasure,
  plural,
  panelQuery,
  perDay,
  perModel,
  type SearchReply,
  type SessionList,
  type Transcript,
  type UsageReply,
  useSessionCode
} from './panelmodel';

const SVG = 'http://www.w3.org/2000/svg';

/** The endpoints' client, through `ServerConnection` (the server's token and XSRF cookie). */
export class PanelClient {
  constructor(private readonly server: ServerConnection.ISettings) {}

  async get<T>(view: string, path: string, extra: Record<string, string | null | undefined> = {}): Promise<T> {
    const url = `${this.server.baseUrl.replace(/\/?$/, '/')}blitz/panel/${view}?${panelQuery(path, extra)}`;
    const reply = await ServerConnection.makeRequest(url, { method: 'GET' }, this.server);
    if (!reply.ok) {
      throw new Error(reply.statusText || `the server answered ${reply.status}`);
    }
    return (await reply.json()) as T;
  }
}

function element<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className = '',
  text = ''
): HTMLElementTagNameMap[K] {
  const made = document.createElement(tag);
  if (className) {
    made.className = className;
  }
  if (text) {
    made.textContent = text;
  }
  return made;
}

function labelled<T extends HTMLElement>(control: T, label: string): HTMLLabelElement {
  const wrap = element('label', 'blitz-panel-field');
  wrap.append(element('span', '', label), control);
  return wrap;
}

export class BlitzPanel extends Widget {
  private readonly status = element('p', 'blitz-panel-status');
  private readonly where = element('p', 'blitz-panel-where');
  private readonly search = element('input', 'blitz-panel-search');
  private readonly hits = element('ul', 'blitz-panel-hits');
  private readonly list = element('ul', 'blitz-panel-sessions');
  private readonly chart = element('section', 'blitz-panel-usage');
  private readonly detail = element('section', 'blitz-panel-detail');
  private readonly measure = element('select', 'blitz-panel-measure');
  private path = '';
  private usage: UsageReply | null = null;
  private searchTimer = 0;
  private measureChosen = false;

  constructor(
    private readonly client: PanelClient,
    private readonly tracker: INotebookTracker
  ) {
    super();
    this.id = 'blitz-side-panel';
    this.addClass('blitz-panel');
    this.title.caption = 'Blitz: sessions, usage and audit';
    this.title.iconClass = 'blitz-panel-icon';
    this.node.setAttribute('role', 'region');
    this.node.setAttribute('aria-label', 'Blitz sessions');

    const header = element('div', 'blitz-panel-header');
    header.append(element('h2', '', 'Blitz'));
    const refresh = element('button', 'blitz-panel-refresh', 'Refresh');
    refresh.type = 'button';
    refresh.addEventListener('click', () => void this.refresh());
    header.append(refresh);

    this.search.type = 'search';
    this.search.placeholder = 'Search sessions';
    this.search.addEventListener('input', () => {
      window.clearTimeout(this.searchTimer);
      this.searchTimer = window.setTimeout(() => void this.runSearch(), 250);
    });
    this.search.addEventListener('keydown', event => {
      if (event.key === 'Enter') {
        window.clearTimeout(this.searchTimer);
        void this.runSearch();
      }
    });
    this.hits.setAttribute('aria-label', 'Search results');
    this.list.setAttribute('aria-label', 'Sessions');
    for (const [value, text] of [
      ['cost', 'Cost'],
      ['tokens', 'Tokens']
    ]) {
      const option = element('option', '', text);
      option.value = value;
      this.measure.append(option);
    }
    this.measure.addEventListener('change', () => {
      this.measureChosen = true;
      this.drawUsage();
    });
    this.status.setAttribute('role', 'status');

    this.node.append(
      header,
      this.where,
      labelled(this.search, 'Search'),
      this.hits,
      element('h3', '', 'Sessions'),
      this.list,
      this.chart,
      this.detail,
      this.status
    );
    tracker.currentChanged.connect(() => void this.refresh());
  }

  protected onAfterShow(): void {
    void this.refresh();
  }

  /** The notebook the panel is showing: the current one, else none. */
  private get notebook(): NotebookPanel | null {
    return this.tracker.currentWidget;
  }

  /** Read everything again; `keepDetail` keeps the opened session (after switching to it). */
  async refresh(keepDetail = false): Promise<void> {
    const notebook = this.notebook;
    this.path = notebook?.context.path ?? '';
    if (!keepDetail) {
      this.hits.replaceChildren();
      this.detail.replaceChildren();
    }
    if (!notebook) {
      this.where.textContent = 'Open a notebook to see the sessions of its folder.';
      this.list.replaceChildren();
      this.chart.replaceChildren();
      return;
    }
    try {
      const listed = await this.client.get<SessionList>('sessions', this.path);
      this.where.textContent = `Folder ${listed.workspace}` + (listed.store ? ` · ${listed.store}` : '');
      this.showSessions(listed);
      this.usage = listed.sessions.length ? await this.client.get<UsageReply>('usage', this.path) : null;
      if (this.usage && !this.measureChosen) {
        this.measure.value = defaultMeasure(this.usage);
      }
      this.drawUsage();
      if (!keepDetail || listed.problem) {
        this.say(listed.problem ?? '');
      }
    } catch (error) {
      this.say(`Could not read the sessions: ${(error as Error).message}`);
    }
  }

  private say(text: string): void {
    this.status.textContent = text;
  }

  private showSessions(listed: SessionList): void {
    const now = Date.now() / 1000;
    this.list.replaceChildren(
      ...listed.sessions.map(row => {
        const item = element('li');
        const open = element('button', 'blitz-panel-session');
        open.type = 'button';
        open.dataset.session = row.name;
        open.append(
          element('span', 'blitz-panel-name', row.name),
          element(
            'span',
            'blitz-panel-meta',
            `${plural(row.turns, 'turn')} · ${formatWhen(row.last_used, now)} · ` +
              `${formatCost(row.cost_usd, row.priced)}`
          )
        );
        if (row.held_by) {
          const held = element('span', 'blitz-panel-held', 'in use');
          held.title = `held by a kernel: ${row.held_by}`;
          open.append(held);
        }
        open.setAttribute('aria-label', `Open session ${row.name}`);
        open.addEventListener('click', () => void this.open(row.name));
        item.append(open);
        return item;
      })
    );
  }

  private async runSearch(): Promise<void> {
    const text = this.search.value.trim();
    if (!text || !this.path) {
      this.hits.replaceChildren();
      return;
    }
    try {
      const found = await this.client.get<SearchReply>('search', this.path, { q: text });
      if (this.search.value.trim() !== text) {
        return; // the user typed on: a newer search is coming
      }
      this.hits.replaceChildren(
        ...found.hits.map(hit => {
          const item = element('li');
          const open = element('button', 'blitz-panel-hit');
          open.type = 'button';
          open.dataset.session = hit.session;
          open.append(element('span', 'blitz-panel-name', `${hit.session} · ${hit.role}`));
          const excerpt = element('span', 'blitz-panel-excerpt');
          for (const part of hit.parts) {
            excerpt.append(part.match ? element('mark', '', part.text) : document.createTextNode(part.text));
          }
          open.append(excerpt);
          open.setAttribute('aria-label', `Open session ${hit.session}: ${hit.parts.map(p => p.text).join('')}`);
          open.addEventListener('click', () => void this.open(hit.session));
          item.append(open);
          return item;
        })
      );
      this.say(found.problem ?? (found.hits.length ? '' : `Nothing found for “${text}”.`));
    } catch (error) {
      this.say(`Search failed: ${(error as Error).message}`);
    }
  }

  private drawUsage(): void {
    this.chart.replaceChildren();
    const usage = this.usage;
    if (!usage) {
      return;
    }
    const measure = this.measure.value as Measure;
    this.chart.append(
      element('h3', '', 'Usage'),
      element(
        'p',
        'blitz-panel-total',
        `${formatCost(usage.total.cost_usd, usage.total.priced)} · ` +
          `${formatTokens(usage.total.input_tokens + usage.total.output_tokens)} tokens · ${usage.total.calls} calls`
      ),
      labelled(this.measure, 'Show'),
      barChart('Per day', perDay(usage, measure), measure),
      barChart('Per model', perModel(usage, measure), measure)
    );
  }

  private async open(name: string): Promise<void> {
    this.detail.replaceChildren(element('p', '', `Loading ${name}…`));
    try {
      const [transcript, budget, audit] = await Promise.all([
        this.client.get<Transcript>('transcript', this.path, { session: name }),
        this.client.get<BudgetReply>('budget', this.path, { session: name }),
        this.client.get<AuditReply>('audit', this.path, { session: name })
      ]);
      this.showDetail(transcript, budget, audit);
    } catch (error) {
      this.detail.replaceChildren(element('p', '', `Could not open ${name}: ${(error as Error).message}`));
    }
  }

  private showDetail(transcript: Transcript, budget: BudgetReply, audit: AuditReply): void {
    const heading = element('h3', '', `Session ${transcript.name}`);
    heading.tabIndex = -1;
    const use = element('button', 'blitz-panel-use', 'Use in this notebook');
    use.type = 'button';
    use.addEventListener('click', () => void this.use(transcript.name));
    const messages = element('ol', 'blitz-panel-transcript');
    messages.setAttribute('aria-label', `Transcript of ${transcript.name}`);
    for (const entry of transcript.messages) {
      const item = element('li', entry.compacted ? 'blitz-panel-compacted' : '');
      item.append(element('span', 'blitz-panel-role', entry.role), element('div', 'blitz-panel-text', entry.text));
      messages.append(item);
    }
    this.detail.replaceChildren(
      heading,
      use,
      element('p', 'blitz-panel-budget', budgetLine(budget)),
      element('h4', '', `Transcript (${plural(transcript.turns, 'turn')})`),
      messages,
      auditSection(audit)
    );
    heading.focus();
  }

  /** `%blitz_session use NAME` through the notebook's kernel, silently (no cell, no output). */
  private async use(name: string): Promise<void> {
    const kernel = this.notebook?.sessionContext.session?.kernel;
    if (!kernel) {
      this.say("Start the notebook's kernel first: switching the session runs in it.");
      return;
    }
    try {
      const future = kernel.requestExecute({ code: useSessionCode(name), silent: true, store_history: false });
      const reply = await future.done;
      const content = reply.content;
      this.say(
        content.status === 'ok'
          ? `This notebook now uses session ${name}.`
          : `Could not switch: ${content.status === 'error' ? content.evalue : content.status}`
      );
      await this.refresh(true);
    } catch (error) {
      this.say(`Could not switch: ${(error as Error).message}`);
    }
  }
}

function auditSection(audit: AuditReply): HTMLElement {
  const section = element('section', 'blitz-panel-audit');
  const tool = element('select', 'blitz-panel-audit-tool');
  const decision = element('select', 'blitz-panel-audit-decision');
  for (const [select, values] of [
    [tool, audit.tools],
    [decision, audit.decisions]
  ] as const) {
    const any = element('option', '', 'all');
    any.value = '';
    select.append(any, ...values.map(value => Object.assign(element('option', '', value), { value })));
  }
  const rows = element('ul', 'blitz-panel-audit-rows');
  rows.setAttribute('aria-label', 'Audit trail');
  const draw = (): void => {
    const kept = filterAudit(audit.records, { tool: tool.value, decision: decision.value });
    rows.replaceChildren(
      ...kept.map(record => {
        const item = element('li', `blitz-panel-decision-${record.decision}`);
        item.textContent =
          `turn ${record.turn + 1} · ${record.tool} · ${record.decision} (${record.decided_by}) · ${record.status}` +
          (record.reason ? ` — ${record.reason}` : '');
        item.title = record.arguments;
        return item;
      })
    );
    if (!kept.length) {
      rows.append(element('li', '', audit.records.length ? 'No call matches the filters.' : 'No tool calls.'));
    }
  };
  tool.addEventListener('change', draw);
  decision.addEventListener('change', draw);
  section.append(element('h4', '', 'Audit trail'), labelled(tool, 'Tool'), labelled(decision, 'Decision'), rows);
  draw();
  return section;
}

function barChart(title: string, values: { label: string; value: number }[], measure: Measure): HTMLElement {
  const figure = element('figure', 'blitz-panel-chart');
  figure.append(element('figcaption', '', title));
  const layout = layoutBars(values, measure);
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', `0 0 ${layout.width} ${layout.height}`);
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', `${title}: ${layout.bars.map(bar => bar.title).join('; ') || 'nothing yet'}`);
  for (const bar of layout.bars) {
    const rect = document.createElementNS(SVG, 'rect');
    for (const [key, value] of Object.entries({ x: bar.x, y: bar.y, width: bar.width, height: bar.height })) {
      rect.setAttribute(key, String(value));
    }
    rect.setAttribute('class', 'blitz-panel-bar');
    const tip = document.createElementNS(SVG, 'title');
    tip.textContent = bar.title;
    rect.append(tip);
    svg.append(rect);
  }
  figure.append(svg);
  const legend = element('ul', 'blitz-panel-legend');
  for (const bar of layout.bars) {
    legend.append(element('li', '', bar.title));
  }
  figure.append(legend);
  return figure;
}
