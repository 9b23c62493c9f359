import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { DashboardError } from './errors.js';

/** One file of the browser UI, ready to serve. */
export interface DashboardAsset {
  readonly body: Buffer;
  readonly contentType: string;
  /** Strong, content-hashed ETag (quoted). */
  readonly etag: string;
}

/** The built browser UI: the page and the files it loads, by URL path. */
export interface DashboardAssets {
  /** `GET /`. */
  readonly index: DashboardAsset;
  /** `/assets/<name>` → the file. */
  readonly files: ReadonlyMap<string, DashboardAsset>;
}

/**
 * Where `scripts/build-ui.mjs` writes the UI (the same from `src/` and
 * `dist/`; the npm package and the single executable mirror it).
 */
export const ASSETS_DIR = new URL('../dist/ui/', import.meta.url);

/** The files of {@link ASSETS_DIR}: the page, then what it loads under `/assets/`. */
export const ASSET_FILES = ['index.html', 'dashboard.js', 'dashboard.css'] as const;

const CONTENT_TYPES: Record<string, string> = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
};

function asset(body: Buffer, name: string): DashboardAsset {
  const ext = name.slice(name.lastIndexOf('.') + 1);
  const hash = createHash('sha256').update(body).digest('base64url').slice(0, 16);
  return { body, contentType: CONTENT_TYPES[ext] ?? 'application/octet-stream', etag: `"${hash}"` };
}

/**
 * Loads the built UI (read once, served from memory). Throws
 * DASHBOARD_ASSETS_MISSING, loudly at start-up, when the package's build
 * step has not run.
 */
export function loadDashboardAssets(dir: URL = ASSETS_DIR): DashboardAssets {
  const read = (name: string): Buffer => {
    try {
      return readFileSync(new URL(name, dir));
    } catch (err) {
      throw new DashboardError('DASHBOARD_ASSETS_MISSING', (err as Error).message, { cause: err });
    }
  };
  const [index, ...rest] = ASSET_FILES;
  return {
    index: asset(read(index), index),
    files: new Map(rest.map((name) => [`/assets/${name}`, asset(read(name), name)])),
  };
}
