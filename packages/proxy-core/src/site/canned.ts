import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { HeaderPlan } from '../middleware/header-plan.js';

const TEXT = 'text/plain; charset=utf-8';

/** Precomputed answer: the same headers object is handed to every `writeHead` (Node only reads it). */
export interface Canned {
  readonly status: number;
  readonly body: Buffer;
  readonly plain: OutgoingHttpHeaders;
  readonly secure: OutgoingHttpHeaders;
}

/** Precomputes an answer of the site with its `headers` applied, for plain and TLS connections. */
export function canned(plan: HeaderPlan, status: number, body: string, extra: OutgoingHttpHeaders = {}): Canned {
  // 1xx, 204 and 304 carry neither a body nor Content-Length (RFC 9110 §8.6).
  const bodiless = status < 200 || status === 204 || status === 304;
  const bytes = Buffer.from(bodiless ? '' : body);
  const base: OutgoingHttpHeaders = bodiless ? { ...extra } : { 'content-length': bytes.length, ...extra };
  if (bytes.length > 0 && base['content-type'] === undefined) base['content-type'] = TEXT;
  const plain = { ...base };
  const secure = { ...base };
  plan.plain(plain, status);
  plan.secure(secure, status);
  return { status, body: bytes, plain, secure };
}

/** Writes a precomputed answer. */
export function send(res: ServerResponse, answer: Canned, secure: boolean): void {
  res.writeHead(answer.status, secure ? answer.secure : answer.plain).end(answer.body);
}
