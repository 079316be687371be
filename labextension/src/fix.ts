/**
 * "Ask Blitz to fix": when to offer it on a cell, and the cell it inserts. Free of JupyterLab
 * imports so it can be unit-tested on plain data; fixaction.ts puts it on the page.
 *
 * The inserted `%%blitz` cell names the failing cell by execution count (`@cell:N`, see
 * blitz_kernel/notebook/references.py): the kernel resolves it to that cell's source and
 * outputs, traceback included, when the user runs it. Nothing runs by itself: the user may
 * edit the prompt first.
 */

import { isBlitzPrompt } from './protocol';

/** The action's accessible name (the button's label). */
export const FIX_LABEL = 'Ask Blitz to fix';

/** What the offer needs to know about a cell (a CellSnapshot fits). */
export interface CellRun {
  cell_type: string;
  source: string;
  execution_count: number | null;
  outputs: ReadonlyArray<{ output_type: string }>;
}

/**
 * The execution count of the run to fix: the cell is a code cell (not itself a prompt), has
 * a count, and its outputs hold an error. Null when there is nothing to offer.
 */
export function failedRun(cell: CellRun): number | null {
  if (cell.cell_type !== 'code' || isBlitzPrompt(cell.source) || cell.execution_count === null) {
    return null;
  }
  return cell.outputs.some(output => output.output_type === 'error') ? cell.execution_count : null;
}

/** The offer is made only where an agent can answer it: blitz_kernel is loaded in the kernel. */
export function offerFix(blitzAvailable: boolean, cell: CellRun): number | null {
  return blitzAvailable ? failedRun(cell) : null;
}

/** The source of the `%%blitz` cell inserted below a failed cell. */
export function fixPrompt(executionCount: number): string {
  return `%%blitz\nFix the error in @cell:${executionCount}`;
}

/** Whether the kernel is the "Blitz (Python 3)" kernel (blitz_kernel loaded at start). */
export function isBlitzKernel(kernelName: string | null | undefined): boolean {
  return kernelName === 'blitz';
}
