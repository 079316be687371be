// Unit tests of the labextension's request handling (no browser, no JupyterLab runtime).
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['labextension/test/**/*.test.ts'],
    environment: 'node'
  }
});
