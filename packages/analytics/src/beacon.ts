import type { IncomingMessage, ServerResponse } from 'node:http';
import type { VitalName } from './domain-collector.js';

/** The reserved path of the beacon endpoint. */
export const COLLECT_PATH = '/_proxyd/collect';
/** Largest beacon body, bytes; larger gives 413. */
export const MAX_BEACON_BYTES = 4096;
/** Beacons per client IP per second; more gives 429. */
export const BEACON_RATE_PER_SECOND = 10;
/** Client IPs tracked by the rate limiter in one second; further IPs are limited. */
const RATE_TABLE_LIMIT = 100_000;
/** Metrics in one beacon at most. */
const MAX_METRICS = 8;
/** Longest page path a beacon may carry, characters. */
export const MAX_BEACON_PATH = 2048;

/** Largest plausible value per metric (ms for LCP/INP, score for CLS). */
export const VITAL_LIMITS: Readonly<Record<'LCP' | 'CLS' | 'INP', number>> = Object.freeze({
  LCP: 120_000,
  CLS: 10,
  INP: 60_000,
});

const KEYS: Readonly<Record<string, VitalName>> = { LCP: 'lcp', CLS: 'cls', INP: 'inp' };

/** One validated observation. */
export interface VitalObservation {
  metric: VitalName;
  value: number;
}

/** A parsed beacon. */
export interface Beacon {
  token: string;
  observations: VitalObservation[];
  /** The page's path (`location.pathname` when the script ran), or null when the beacon has none (scripts before issue 22). */
  path: string | null;
}

/**
 * Parses a beacon body `{"t": token, "m": [{"n": "LCP"|"CLS"|"INP", "v": number}], "p": "/path"}`
 * (`p` optional). Returns the token, observations and path, or null when the
 * body is not that shape, a metric is unknown, a value is not finite,
 * negative or implausible ({@link VITAL_LIMITS}), or `p` is there but not a
 * path (a string starting with `/`, at most {@link MAX_BEACON_PATH}
 * characters): one bad entry rejects the whole beacon.
 */
export function parseBeacon(text: string): Beacon | null {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof body !== 'object' || body === null) return null;
  const { t, m, p } = body as { t?: unknown; m?: unknown; p?: unknown };
  if (typeof t !== 'string' || !Array.isArray(m) || m.length === 0 || m.length > MAX_METRICS) return null;
  if (p !== undefined && (typeof p !== 'string' || !p.startsWith('/') || p.length > MAX_BEACON_PATH)) return null;
  const observations: VitalObservation[] = [];
  for (const entry of m) {
    if (typeof entry !== 'object' || entry === null) return null;
    const { n, v } = entry as { n?: unknown; v?: unknown };
    if (typeof n !== 'string' || typeof v !== 'number') return null;
    const metric = Object.hasOwn(KEYS, n) ? KEYS[n] : undefined;
    const limit = VITAL_LIMITS[n as keyof typeof VITAL_LIMITS];
    if (metric === undefined || !Number.isFinite(v) || v < 0 || v > limit) return null;
    observations.push({ metric, value: v });
  }
  return { token: t, observations, path: p ?? null };
}

/** A fixed one-second window per client IP (the table is cleared every second). */
export class BeaconRateLimiter {
  readonly #perSecond: number;
  readonly #counts = new Map<string, number>();
  #second = -1;

  /** @param perSecond beacons allowed per IP per second */
  constructor(perSecond = BEACON_RATE_PER_SECOND) {
    this.#perSecond = perSecond;
  }

  /** Counts a beacon; false when `ip` is over its rate. */
  allow(ip: string, nowMs: number): boolean {
    const second = Math.floor(nowMs / 1000);
    if (second !== this.#second) {
      this.#second = second;
      this.#counts.clear();
    }
    const n = this.#counts.get(ip) ?? 0;
    if (n === 0 && this.#counts.size >= RATE_TABLE_LIMIT) return false;
    if (n >= this.#perSecond) return false;
    this.#counts.set(ip, n + 1);
    return true;
  }
}

/** Ends a request with a small text answer (`Connection: close` when the body was not read). */
export function answer(res: ServerResponse, status: number, text: string, extra: Record<string, string> = {}): void {
  const body = `${text}\n`;
  res.writeHead(status, {
    'content-type': 'text/plain; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    ...extra,
  });
  res.end(body);
}

/**
 * Reads a request body up to `limit` bytes; resolves null (and stops reading)
 * past it or on a client error.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<string | null> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (value: string | null) => {
      if (done) return;
      done = true;
      req.off('data', onData);
      resolve(value);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        finish(null);
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => finish(Buffer.concat(chunks).toString('utf8')));
    req.once('error', () => finish(null));
    req.once('aborted', () => finish(null));
  });
}
