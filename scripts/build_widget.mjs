// Builds the turn widget and the Review changes / Undo all controls (labextension/widget/src)
// into the anywidget ES modules the Python side loads: blitz_kernel/notebook/widgets/static/
// turn.js and undo.js, each one self-contained file (no import at runtime: anywidget loads it
// as a module from the kernel, with no server to resolve imports). Vite's library mode, one
// build per entry so that nothing is split into a shared chunk; not minified, so the committed
// files read and diff. `npm run build:widget` writes them; `node scripts/build_widget.mjs
// --out DIR` writes them elsewhere, which is how scripts/js_test.sh finds out whether the
// committed ones are stale. The output depends only on the sources (no timestamp, no path).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { build } from 'vite';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const outIndex = args.indexOf('--out');
const out = outIndex >= 0 ? resolve(args[outIndex + 1]) : join(root, 'blitz_kernel', 'notebook', 'widgets', 'static');
const ENTRIES = ['turn', 'undo'];

mkdirSync(out, { recursive: true });
for (const entry of ENTRIES) {
  const built = await build({
    configFile: false,
    root,
    logLevel: 'warn',
    publicDir: false,
    build: {
      write: false,
      copyPublicDir: false,
      minify: false,
      sourcemap: false,
      target: 'es2020',
      reportCompressedSize: false,
      lib: {
        entry: join(root, 'labextension', 'widget', 'src', `${entry}.ts`),
        formats: ['es'],
        fileName: () => `${entry}.js`
      },
      rollupOptions: { output: { inlineDynamicImports: true } }
    }
  });
  const result = Array.isArray(built) ? built[0] : built; // one output format: one result
  const chunks = result.output.filter(file => file.type === 'chunk');
  if (chunks.length !== 1) {
    throw new Error(`build:widget: ${entry} built into ${chunks.length} files, not one`);
  }
  const banner =
    `// Built from labextension/widget/src/${entry}.ts by \`npm run build:widget\`: do not edit.\n` +
    '// The sources, how they are built and what checks them: docs/widget.md.\n';
  writeFileSync(join(out, `${entry}.js`), banner + chunks[0].code);
}
console.log(`build:widget: wrote ${ENTRIES.map(entry => join(out, `${entry}.js`)).join(' and ')}`);
