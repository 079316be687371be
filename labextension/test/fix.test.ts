/**
 * "Ask Blitz to fix": when the action is offered and the cell it inserts (fix.ts). The page
 * side (fixaction.ts) is exercised in tests/browser/test_fix_action.py.
 */

import { describe, expect, it } from 'vitest';

import { type CellRun, FIX_LABEL, failedRun, fixPrompt, isBlitzKernel, offerFix } from '../src/fix';

const failed: CellRun = {
  cell_type: 'code',
  source: 'x = 1\nprint(x / 0)',
  execution_count: 7,
  outputs: [{ output_type: 'stream' }, { output_type: 'error' }]
};

describe('failedRun', () => {
  it('gives the execution count of a code cell whose outputs hold an error', () => {
    expect(failedRun(failed)).toBe(7);
  });

  it('offers nothing for a cell that ran fine, has not run, or is running', () => {
    expect(failedRun({ ...failed, outputs: [{ output_type: 'stream' }, { output_type: 'execute_result' }] })).toBeNull();
    expect(failedRun({ ...failed, outputs: [] })).toBeNull();
    expect(failedRun({ ...failed, execution_count: null })).toBeNull();
  });

  it('offers nothing on markdown cells or on agent prompts that failed', () => {
    expect(failedRun({ ...failed, cell_type: 'markdown' })).toBeNull();
    expect(failedRun({ ...failed, source: '%%blitz --max-cost 0.1\nDo it.' })).toBeNull();
    expect(failedRun({ ...failed, source: '  %%blitz_btw why?' })).toBeNull();
    expect(failedRun({ ...failed, source: '%%blitzkrieg\n1/0' })).toBe(7);
  });
});

describe('offerFix', () => {
  it('is made only where blitz_kernel can answer', () => {
    expect(offerFix(true, failed)).toBe(7);
    expect(offerFix(false, failed)).toBeNull();
  });
});

describe('fixPrompt', () => {
  it('is a %%blitz cell naming the failed run by execution count', () => {
    expect(fixPrompt(12)).toBe('%%blitz\nFix the error in @cell:12');
  });

  it('has the accessible name the issue asks for', () => {
    expect(FIX_LABEL).toBe('Ask Blitz to fix');
  });
});

describe('isBlitzKernel', () => {
  it('knows the Blitz kernelspec by name', () => {
    expect(isBlitzKernel('blitz')).toBe(true);
    expect(isBlitzKernel('python3')).toBe(false);
    expect(isBlitzKernel(undefined)).toBe(false);
  });
});
