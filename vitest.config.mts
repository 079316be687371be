// Unit tests of the labextension and the turn widget (no browser, no JupyterLab runtime): in node,
// or in jsdom for a file that asks for it (`// @vitest-environment jsdom`: the widget's tests).
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['labextension/test/**/*.test.ts'],
    environment: 'node'
  }
});
