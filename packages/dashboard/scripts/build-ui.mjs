// Bundles the dashboard's browser UI (src/browser/: TypeScript and CSS, with
// uPlot) into dist/ui/: dashboard.js (one minified IIFE), dashboard.css and
// index.html, which names both with a content hash (`?v=`) so the server can
// let browsers keep them for a year. Nothing is fetched at run time: no font,
// no CDN. Run by the package's `build` script before `tsc -b`.
import { createHash } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = `${root}dist/ui/`;
await mkdir(out, { recursive: true });
const uplot = JSON.parse(await readFile(`${root}node_modules/uplot/package.json`, 'utf8'));
const license = (await readFile(`${root}node_modules/uplot/LICENSE`, 'utf8')).trim().replaceAll('*/', '* /');
const notice = `/*! proxyd dashboard. Bundles uPlot ${uplot.version}:\n\n${license}\n*/`;
const result = await build({
  entryPoints: [
    { in: `${root}src/browser/main.ts`, out: 'dashboard' },
    { in: `${root}src/browser/style.css`, out: 'dashboard' },
  ],
  outdir: out,
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
  // uPlot's license travels with it (its own header is not a legal comment, so esbuild would drop it).
  banner: { js: notice, css: notice },
  legalComments: 'none',
  logLevel: 'warning',
  metafile: true,
});
const version = async (name) =>
  createHash('sha256')
    .update(await readFile(`${out}${name}`))
    .digest('base64url')
    .slice(0, 12);
const html = (await readFile(`${root}src/browser/index.html`, 'utf8'))
  .replace('%SCRIPT%', `/assets/dashboard.js?v=${await version('dashboard.js')}`)
  .replace('%STYLE%', `/assets/dashboard.css?v=${await version('dashboard.css')}`);
await writeFile(`${out}index.html`, html);
const sizes = Object.entries(result.metafile.outputs).map(([file, o]) => `${file.split('/').pop()} ${o.bytes} bytes`);
console.log(`dashboard: dist/ui/ ${sizes.join(', ')}`);
