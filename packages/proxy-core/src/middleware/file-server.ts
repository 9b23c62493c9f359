import { constants } from 'node:fs';
import { type FileHandle, open, realpath, stat } from 'node:fs/promises';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { extname, posix, resolve, sep } from 'node:path';
import type { HeaderEdit } from './header-plan.js';

/** Content types by lowercase extension; anything else is `application/octet-stream`. */
export const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.htm': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
  '.md': 'text/markdown; charset=utf-8',
  '.xml': 'application/xml',
  '.csv': 'text/csv; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.avif': 'image/avif',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
  '.otf': 'font/otf',
  '.wasm': 'application/wasm',
  '.pdf': 'application/pdf',
  '.zip': 'application/zip',
  '.gz': 'application/gzip',
  '.mp4': 'video/mp4',
  '.webm': 'video/webm',
  '.mp3': 'audio/mpeg',
  '.ogg': 'audio/ogg',
  '.wav': 'audio/wav',
  '.webmanifest': 'application/manifest+json',
};

const TEXT = 'text/plain; charset=utf-8';
const INDEX = 'index.html';

/** Where a request's file is, relative to the served root. */
export interface FileRequest {
  /** Path below the root, raw (percent-encoded, no query), e.g. after `handle_path` stripped a prefix. */
  readonly relPath: string;
  /** The request's own path (for the trailing-slash redirect of a directory). */
  readonly urlPath: string;
  /** The query string without `?` ('' when none). */
  readonly query: string;
}

/**
 * How a file answer meets `handle_errors`: `onError` may answer a 403 or 404
 * instead (true: it did); `status` (inside an error route) is the status
 * a found file is served with, without conditional or range answers.
 */
export interface FileErrors {
  readonly onError?: ((status: number, message: string) => boolean) | undefined;
  readonly status?: number | undefined;
}

/**
 * `root <dir>` + `file_server`: serves regular files below `root`.
 *
 * - Only GET and HEAD (else 405 with `Allow: GET, HEAD`).
 * - The path is percent-decoded once; a NUL byte or an undecodable escape
 *   gives 400, a `..` segment (also as `%2e%2e`, or across an encoded `/`)
 *   gives 403; the real path of the file (symlinks resolved) must stay below
 *   the real root, else 403.
 * - A directory serves its `index.html` (no listings: 404 without one); a
 *   directory asked without its trailing `/` is redirected (308) to it;
 *   the Location is always a path with exactly one leading `/` (never
 *   `//host`, see {@link directoryLocation}).
 * - `ETag` (`"<size hex>-<mtime ms hex>"`) and `Last-Modified`;
 *   `If-None-Match` (weak compare, `*`) then `If-Modified-Since` give 304.
 * - One `Range: bytes=…` (a-b, a-, -n) gives 206 with `Content-Range`;
 *   an unsatisfiable one 416 with `Content-Range: bytes *\/size`; several
 *   ranges, or an `If-Range` that does not match, give the whole file (200).
 */
export class FileServer {
  readonly root: string;
  #realRoot: Promise<string> | null = null;

  constructor(root: string) {
    this.root = resolve(root);
  }

  /** Answers the request; `edit` adds the block's headers to every response. */
  serve(req: IncomingMessage, res: ServerResponse, file: FileRequest, edit: HeaderEdit, errors?: FileErrors): void {
    this.#serve(req, res, file, edit, errors).catch(() => {
      if (!res.headersSent) simple(res, 500, 'internal error\n', edit);
      else res.destroy();
    });
  }

  /**
   * Whether `relPath` (raw, as a request path) names a file below the root,
   * or a directory when `directory`: `try_files`' test, with the rules of
   * {@link serve} (decoded once, no `..`, the real path inside the root).
   */
  async exists(relPath: string, directory: boolean): Promise<boolean> {
    let decoded: string;
    try {
      decoded = decodeURIComponent(relPath);
    } catch {
      return false;
    }
    if (decoded.includes('\0') || decoded.split(/[/\\]/).includes('..')) return false;
    this.#realRoot ??= realpath(this.root).catch(() => this.root);
    const target = await realpathInside(this.root + posix.normalize(`/${decoded}`), await this.#realRoot);
    if (target === null || target === 'outside') return false;
    try {
      const info = await stat(target);
      return directory ? info.isDirectory() : info.isFile();
    } catch {
      return false;
    }
  }

  async #serve(
    req: IncomingMessage,
    res: ServerResponse,
    file: FileRequest,
    edit: HeaderEdit,
    errors: FileErrors | undefined,
  ): Promise<void> {
    const fail = (status: number, body: string): void => {
      if (errors?.onError?.(status, body.trimEnd()) === true) return;
      simple(res, status, body, edit);
    };
    const method = req.method;
    // An error page answers whatever the method that met the error.
    if (method !== 'GET' && method !== 'HEAD' && errors?.status === undefined) {
      simple(res, 405, 'method not allowed\n', edit, { allow: 'GET, HEAD' });
      return;
    }
    let decoded: string;
    try {
      decoded = decodeURIComponent(file.relPath);
    } catch {
      simple(res, 400, 'bad request\n', edit);
      return;
    }
    if (decoded.includes('\0')) {
      simple(res, 400, 'bad request\n', edit);
      return;
    }
    if (decoded.split(/[/\\]/).includes('..')) {
      fail(403, 'forbidden\n');
      return;
    }
    const rel = posix.normalize(`/${decoded}`);
    this.#realRoot ??= realpath(this.root).catch(() => this.root);
    const realRoot = await this.#realRoot;
    let target = await realpathInside(this.root + rel, realRoot);
    if (target === 'outside') {
      fail(403, 'forbidden\n');
      return;
    }
    if (target === null) {
      fail(404, 'not found\n');
      return;
    }
    let info = await stat(target);
    if (info.isDirectory()) {
      if (!file.urlPath.endsWith('/')) {
        const location = `${directoryLocation(file.urlPath)}${file.query === '' ? '' : `?${file.query}`}`;
        simple(res, 308, '', edit, { location });
        return;
      }
      target = await realpathInside(`${target}/${INDEX}`, realRoot);
      if (target === 'outside') {
        fail(403, 'forbidden\n');
        return;
      }
      if (target === null) {
        fail(404, 'not found\n');
        return;
      }
      info = await stat(target);
    }
    if (!info.isFile()) {
      fail(404, 'not found\n');
      return;
    }
    let handle: FileHandle;
    try {
      handle = await open(target, constants.O_RDONLY);
    } catch {
      simple(res, 403, 'forbidden\n', edit);
      return;
    }
    try {
      info = await handle.stat();
    } catch (err) {
      await handle.close();
      throw err;
    }
    const size = info.size;
    const mtime = Math.floor(info.mtimeMs);
    const etag = `"${size.toString(16)}-${mtime.toString(16)}"`;
    const lastModified = new Date(mtime).toUTCString();
    const headers: OutgoingHttpHeaders = {
      'content-type': CONTENT_TYPES[extname(target).toLowerCase()] ?? 'application/octet-stream',
      etag,
      'last-modified': lastModified,
      'accept-ranges': 'bytes',
    };
    const errorStatus = errors?.status;
    if (errorStatus !== undefined) {
      // An error page: served whole with the error's status.
      headers['content-length'] = size;
      edit(headers, errorStatus);
      res.writeHead(errorStatus, headers);
      if (method === 'HEAD' || size === 0) {
        await handle.close();
        res.end();
        return;
      }
      const page = handle.createReadStream({ autoClose: true });
      page.on('error', () => res.destroy());
      res.on('close', () => page.destroy());
      page.pipe(res);
      return;
    }
    if (notModified(req, etag, mtime)) {
      await handle.close();
      edit(headers, 304);
      delete headers['content-type'];
      res.writeHead(304, headers).end();
      return;
    }
    let start = 0;
    let end = size - 1;
    let status = 200;
    const range = req.headers.range;
    if (range !== undefined && ifRangeHolds(firstValue(req.headers['if-range']), etag, mtime)) {
      const parsed = parseRange(range, size);
      if (parsed === 'unsatisfiable') {
        await handle.close();
        simple(res, 416, 'range not satisfiable\n', edit, { 'content-range': `bytes */${size}` });
        return;
      }
      if (parsed !== null) {
        start = parsed[0];
        end = parsed[1];
        status = 206;
        headers['content-range'] = `bytes ${start}-${end}/${size}`;
      }
    }
    headers['content-length'] = size === 0 ? 0 : end - start + 1;
    edit(headers, status);
    res.writeHead(status, headers);
    if (method === 'HEAD' || size === 0) {
      await handle.close();
      res.end();
      return;
    }
    const stream = handle.createReadStream({ start, end, autoClose: true });
    stream.on('error', () => res.destroy());
    res.on('close', () => stream.destroy());
    stream.pipe(res);
  }
}

/**
 * The trailing-slash redirect target of a directory: `urlPath` + `/`, with
 * any run of leading `/` or `\` collapsed into one `/`. A Location starting
 * with `//` (or `/\`, which browsers read the same way) names another host:
 * `GET //evil.example` would otherwise redirect to `//evil.example/`.
 */
export function directoryLocation(urlPath: string): string {
  let start = 0;
  while (start < urlPath.length && (urlPath.charCodeAt(start) === 0x2f || urlPath.charCodeAt(start) === 0x5c)) start++;
  return `/${urlPath.slice(start)}/`;
}

/** The real path of `path` if it exists below `realRoot`; null when absent; 'outside' when it escapes. */
async function realpathInside(path: string, realRoot: string): Promise<string | null | 'outside'> {
  let real: string;
  try {
    real = await realpath(path);
  } catch {
    return null;
  }
  if (real !== realRoot && !real.startsWith(realRoot.endsWith(sep) ? realRoot : realRoot + sep)) return 'outside';
  return real;
}

function notModified(req: IncomingMessage, etag: string, mtime: number): boolean {
  const inm = req.headers['if-none-match'];
  if (inm !== undefined) {
    if (inm.trim() === '*') return true;
    const bare = etag;
    for (const raw of inm.split(',')) {
      const tag = raw.trim();
      if (tag === bare || tag === `W/${bare}`) return true;
    }
    return false;
  }
  const ims = req.headers['if-modified-since'];
  if (ims !== undefined) {
    const since = Date.parse(ims);
    return !Number.isNaN(since) && Math.floor(mtime / 1000) * 1000 <= since;
  }
  return false;
}

function firstValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function ifRangeHolds(ifRange: string | undefined, etag: string, mtime: number): boolean {
  if (ifRange === undefined) return true;
  const value = ifRange.trim();
  if (value.startsWith('"') || value.startsWith('W/')) return value === etag;
  const date = Date.parse(value);
  return !Number.isNaN(date) && Math.floor(mtime / 1000) * 1000 === date;
}

/**
 * Parses a single `bytes=` range against `size`: [start, end] inclusive, null
 * to ignore the header (not bytes, several ranges, malformed), or
 * 'unsatisfiable'.
 */
export function parseRange(header: string, size: number): [number, number] | null | 'unsatisfiable' {
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (m === null) return null;
  const a = m[1] ?? '';
  const b = m[2] ?? '';
  if (a === '' && b === '') return null;
  if (a === '') {
    const n = Number(b);
    if (n === 0 || size === 0) return 'unsatisfiable';
    return [Math.max(0, size - n), size - 1];
  }
  const start = Number(a);
  const end = b === '' ? size - 1 : Math.min(Number(b), size - 1);
  if (b !== '' && Number(b) < start) return null;
  if (start >= size) return 'unsatisfiable';
  return [start, end];
}

function simple(
  res: ServerResponse,
  status: number,
  body: string,
  edit: HeaderEdit,
  extra?: OutgoingHttpHeaders,
): void {
  const headers: OutgoingHttpHeaders = { 'content-type': TEXT, 'content-length': Buffer.byteLength(body), ...extra };
  edit(headers, status);
  res.writeHead(status, headers).end(body);
}
