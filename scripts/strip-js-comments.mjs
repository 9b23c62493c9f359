// Rewrites the JavaScript tsc emitted into a package's dist/ without comments
// and with every non-ASCII character escaped, keeping the `.d.ts` files (and
// their doc comments) as tsc wrote them. Run by each package's `build` script
// after `tsc -b`: `node ../../scripts/strip-js-comments.mjs [dist]`.
//
// Why (issue 32): every process keeps the source of each module it loads as
// a string in its V8 heap, and V8 stores a whole file two bytes a character
// when one character of it is outside Latin-1 (a `…` or `→` in a comment).
// The daemon's own modules, commented, took ~3.3 MB of heap across dist/,
// ~2.0 stripped and escaped (~1 MB a process: bench/memory/notes/2026-11-28-mem4.md).
// tsc's `removeComments` would strip the `.d.ts` doc comments as well.
//
// esbuild, file by file (no bundling, no renaming, `esnext` so no syntax is
// lowered; whitespace minified, as that is what drops every comment), reads
// each file's source map and writes one mapping the output to the TypeScript
// source. Test files are left as they are: nothing runs them
// from dist/, and the browser bundles beside them are not tsc's. Running it
// again over stripped files gives the same files.
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { buildSync } from 'esbuild';

const dist = path.resolve(process.argv[2] ?? 'dist');

/** The `.js` files tsc wrote under `dir` (those beside a `.d.ts`: not dist/ui/ or dist/browser/ bundles), test files excepted. */
function jsFiles(dir) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...jsFiles(file));
    else if (
      entry.name.endsWith('.js') &&
      !entry.name.endsWith('.test.js') &&
      existsSync(`${file.slice(0, -3)}.d.ts`)
    ) {
      out.push(file);
    }
  }
  return out;
}

const files = jsFiles(dist);
if (files.length > 0) {
  buildSync({
    entryPoints: files,
    outdir: dist,
    outbase: dist,
    allowOverwrite: true,
    bundle: false,
    format: 'esm',
    platform: 'node',
    target: 'esnext',
    // The only way esbuild drops every comment (some inside functions stay otherwise); names and
    // syntax are kept, and the source map points stack traces back at the TypeScript.
    minifyWhitespace: true,
    // Non-ASCII characters of strings and regular expressions as escapes: one-byte sources.
    charset: 'ascii',
    legalComments: 'none',
    sourcemap: 'linked',
    sourcesContent: false,
    logLevel: 'warning',
  });
}
