import type { ServerResponse } from 'node:http';
import type { DataPlaneHooks, RequestRecord } from '../hooks.js';
import { kEvents, kRecord } from '../slots.js';

/** What the server keeps per request for its `onRequest` record. */
export interface PendingRecord {
  readonly hook: NonNullable<DataPlaneHooks['onRequest']>;
  readonly host: string;
  readonly domain: string | null;
  readonly analytics: boolean;
  readonly path: string;
  /** The target's query string without `?` (undefined without one). */
  readonly query: string | undefined;
  readonly clientIp: string;
  readonly startedAt: number;
  /** `performance.now()` at the start: the duration's clock (monotonic). */
  readonly startedMono: number;
  /** The server's counts: the request is in flight until its record goes out. */
  readonly counts: RequestCounts;
}

/** What a server counts of its requests (read by {@link ProxyServer.stats}). */
export interface RequestCounts {
  inFlight: number;
}

/**
 * Emits the request record when the response closes: status 0 when no
 * header went out; `bytesSent` counts the body bytes written (0 for HEAD and
 * for a response that never sent its header).
 */
export function emitRecord(
  this: ServerResponse & {
    [kRecord]?: PendingRecord | undefined;
    [kEvents]?: number;
    _header?: string | null;
    bodyBytes?: number;
    contentType?: string | undefined;
  },
): void {
  const pending = this[kRecord];
  if (pending === undefined) return;
  pending.counts.inFlight--;
  const req = this.req;
  const declared = req.headers['content-length'];
  const written = req.method === 'HEAD' || !this.headersSent ? 0 : (this.bodyBytes ?? 0);
  const contentType = this.contentType ?? this.getHeader('content-type') ?? contentTypeOf(this._header);
  const record: RequestRecord = {
    host: pending.host,
    domain: pending.domain,
    analytics: pending.analytics,
    method: req.method ?? 'GET',
    path: pending.path,
    query: pending.query,
    status: this.headersSent ? this.statusCode : 0,
    bytesSent: Math.max(written, 0),
    bytesReceived: declared === undefined ? 0 : Number(declared) || 0,
    durationMs: performance.now() - pending.startedMono,
    clientIp: pending.clientIp,
    referer: req.headers.referer,
    userAgent: req.headers['user-agent'],
    contentType: typeof contentType === 'string' ? contentType : undefined,
    startedAt: pending.startedAt,
    protocol: req.httpVersionMajor === 2 ? 'h2' : 'h1',
    events: this[kEvents] ?? 0,
  };
  handRecord(pending.hook, record);
}

/** Hands a finished request's record to the `onRequest` hook; a throwing hook is ignored (hooks.ts contract). */
export function handRecord(hook: NonNullable<DataPlaneHooks['onRequest']>, record: RequestRecord): void {
  try {
    hook(record);
  } catch {
    // Ignored: a hook never breaks the data plane.
  }
}

const CONTENT_TYPE_LINE = /\r\ncontent-type:[ \t]*([^\r]*)/i;

/** Content-Type from the written header block (writeHead with an object keeps no header map). */
function contentTypeOf(header: string | null | undefined): string | undefined {
  if (typeof header !== 'string') return undefined;
  return CONTENT_TYPE_LINE.exec(header)?.[1];
}
