// The usage line under the turn: model, tokens in (cached) and out, cost or "unpriced",
// savings, elapsed time, what the turn is doing or why it stopped, context use and model
// switches. Elapsed time counts in the browser until the kernel sends the final figure.

import type { Footer, Header, TurnWidgetState } from '../../src/generated/protocol';
import { seconds } from './format';
import type { Loose } from './model';

export function footerText(
  footer: Loose<Footer>,
  header: Loose<Header>,
  phase: TurnWidgetState['phase'] | undefined,
  now: number = Date.now()
): string {
  const parts = [footer.model || header.model || 'model'];
  const cached = footer.cached_tokens ? ` (${footer.cached_tokens.toLocaleString()} cached)` : '';
  parts.push(`${(footer.input_tokens || 0).toLocaleString()} in${cached} · ${(footer.output_tokens || 0).toLocaleString()} out`);
  parts.push(footer.cost || 'unpriced');
  if (footer.saving) {
    parts.push(footer.saving);
  }
  const elapsed =
    footer.elapsed_s !== null && footer.elapsed_s !== undefined ? footer.elapsed_s * 1000 : now - (header.started_ms || now);
  parts.push(seconds(elapsed));
  parts.push(footer.stop_reason || footer.progress || (phase === 'finishing' ? 'finishing side questions' : 'running'));
  if (footer.context) {
    parts.push(footer.context);
  }
  for (const note of footer.switches || []) {
    parts.push(note);
  }
  return parts.join(' · ');
}
