import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const analytics = fileURLToPath(new URL('../packages/analytics/', import.meta.url));
const bundle = `${analytics}dist/browser/a.js`;
const source = `${analytics}src/browser/script.js`;

const dashboard = fileURLToPath(new URL('../packages/dashboard/', import.meta.url));
const dashboardPage = `${dashboard}dist/ui/index.html`;
/** What the dashboard's UI bundle is built from. */
const dashboardSources = [`${dashboard}src/browser/`, `${dashboard}src/shared/`];

/**
 * Vitest global setup of the `unit` project, which otherwise runs from
 * sources: the analytics tests serve the bundled browser script, and the
 * daemon's dashboard tests the dashboard's UI, so bundle each (esbuild, well
 * under a second) when it is missing or older than its sources.
 */
export default function setup(): void {
  if (!existsSync(bundle) || statSync(bundle).mtimeMs < statSync(source).mtimeMs) {
    execFileSync(process.execPath, [`${analytics}scripts/build-script.mjs`], { stdio: 'inherit' });
  }
  const built = existsSync(dashboardPage) ? statSync(dashboardPage).mtimeMs : 0;
  const newest = Math.max(...dashboardSources.flatMap((dir) => readdirSync(dir).map((f) => statSync(dir + f).mtimeMs)));
  if (built < newest) {
    execFileSync(process.execPath, [`${dashboard}scripts/build-ui.mjs`], { stdio: 'inherit' });
  }
}
