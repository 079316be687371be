// Small wordings shared by several cards: short arguments, elapsed seconds, plurals.

export function shortArgs(args: Record<string, unknown> | null | undefined): string {
  const text = Object.entries(args || {})
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(', ');
  return text.length > 80 ? `${text.slice(0, 79)}…` : text;
}

export function seconds(ms: number): string {
  return `${(Math.max(0, ms) / 1000).toFixed(1)} s`;
}

/** "1 line", "3 lines". */
export function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? '' : 's'}`;
}
