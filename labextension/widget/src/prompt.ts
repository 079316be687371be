// The turn's head: its prompt (or, for the carry-out of an approved plan, its label) and the
// chips of what the prompt's @ references attached.

import type { Header } from '../../src/generated/protocol';
import { h } from './dom';
import type { Loose } from './model';

export function promptNodes(header: Loose<Header>): HTMLSpanElement[] {
  return header.label
    ? [h('span', { class: 'blitz-carry-out', text: header.label })]
    : [h('span', { class: 'blitz-label', text: 'Prompt' }), h('span', { text: header.prompt || '' })];
}

export function chipNodes(header: Loose<Header>): HTMLSpanElement[] {
  return (header.attachments || []).map(chip =>
    h('span', {
      class: `blitz-chip blitz-chip-${chip.kind}`,
      role: 'listitem',
      title: `@${chip.name} (${chip.kind})`,
      text: chip.label
    })
  );
}
