import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { AnalyticsError } from './errors.js';

/** The reserved path of the browser script. */
export const SCRIPT_PATH = '/_proxyd/a.js';

/** The built browser script, ready to serve. */
export interface ScriptAsset {
  readonly body: Buffer;
  /** Strong, content-hashed ETag (quoted). */
  readonly etag: string;
  /** The version query the injected tag carries (`?v=<hash>`), so a new build busts caches. */
  readonly version: string;
}

/** Where `scripts/build-script.mjs` writes the bundle (the same from `src/` and `dist/`). */
export const SCRIPT_FILE = new URL('../dist/browser/a.js', import.meta.url);

/**
 * Loads the built browser script. Throws ANALYTICS_SCRIPT_MISSING (loudly, at
 * start-up) when the package's build step has not run.
 */
export function loadScriptAsset(file: URL | string = SCRIPT_FILE): ScriptAsset {
  let body: Buffer;
  try {
    body = readFileSync(file);
  } catch (err) {
    throw new AnalyticsError('ANALYTICS_SCRIPT_MISSING', (err as Error).message);
  }
  const hash = createHash('sha256').update(body).digest('base64url').slice(0, 16);
  return { body, etag: `"${hash}"`, version: hash };
}
