import { execFileSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const analytics = fileURLToPath(new URL('../packages/analytics/', import.meta.url));
const bundle = `${analytics}dist/browser/a.js`;
const source = `${analytics}src/browser/script.js`;

/**
 * Vitest global setup of the `unit` project, which otherwise runs from
 * sources: the analytics tests serve the bundled browser script, so bundle it
 * (esbuild, well under a second) when it is missing or older than its source.
 */
export default function setup(): void {
  if (existsSync(bundle) && statSync(bundle).mtimeMs >= statSync(source).mtimeMs) return;
  execFileSync(process.execPath, [`${analytics}scripts/build-script.mjs`], { stdio: 'inherit' });
}
