// Builds the widgets' anywidget ESM modules from TypeScript: labextension/widgets/<name>.ts →
// blitz_kernel/notebook/widgets/static/<name>.js, one self-contained ES module each (esbuild
// bundles what it imports from labextension/src; the generated types vanish), which the
// Python package ships as it is (no build step at install time). `npm run build:widgets`
// writes them; `node scripts/build_widgets.mjs --out DIR` writes them elsewhere, which is how
// scripts/js_test.sh finds out whether the committed ones are stale.
import { mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { build } from 'esbuild';

const WIDGETS = ['undo'];
/** Ported to TypeScript so far; turn.js is still written by hand. */

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const outIndex = args.indexOf('--out');
const out = outIndex >= 0 ? resolve(args[outIndex + 1]) : join(root, 'blitz_kernel', 'notebook', 'widgets', 'static');
mkdirSync(out, { recursive: true });

for (const name of WIDGETS) {
  await build({
    entryPoints: [join(root, 'labextension', 'widgets', `${name}.ts`)],
    outfile: join(out, `${name}.js`),
    bundle: true,
    format: 'esm',
    target: 'es2020',
    charset: 'utf8',
    legalComments: 'none',
    banner: {
      js: `// Built from labextension/widgets/${name}.ts by scripts/build_widgets.mjs: do not edit (npm run build:widgets).`
    },
    logLevel: 'warning'
  });
}
console.log(`build:widgets: wrote ${WIDGETS.map(name => `${name}.js`).join(', ')} to ${out}`);
