// What a turn's cards keep across redraws: which are open (the user's toggles, and cards that
// opened themselves once), which have been seen, and the image nodes built for each call.

import type { ShownImage } from '../../src/generated/protocol';

export interface Cards {
  open: Set<string>;
  seen: Set<string>;
  imageNodes: Map<string, ImageBlock>;
  images: Record<string, ShownImage[] | undefined>;
}

/** A call's images, built once and reused while their count stays the same. */
export interface ImageBlock extends HTMLDivElement {
  blitzCount?: number;
}

/** A tool card whose elapsed time still ticks. */
export interface TickingCard extends HTMLDetailsElement {
  blitzTick?: (() => void) | null;
}

export function newCards(): Cards {
  return { open: new Set(), seen: new Set(), imageNodes: new Map(), images: {} };
}
