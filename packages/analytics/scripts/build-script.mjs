// Bundles src/browser/script.js with the web-vitals package into one small,
// minified IIFE at dist/browser/a.js (served at /_proxyd/a.js). Run by the
// package's `build` script before `tsc -b`.
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
await mkdir(`${root}dist/browser`, { recursive: true });
const result = await build({
  entryPoints: [`${root}src/browser/script.js`],
  outfile: `${root}dist/browser/a.js`,
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['es2020'],
  legalComments: 'none',
  logLevel: 'warning',
  metafile: true,
});
const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
console.log(`analytics: dist/browser/a.js ${bytes} bytes`);
