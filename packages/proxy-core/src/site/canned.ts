import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { RequestContext } from '../hooks.js';
import type { HeaderPlan } from '../middleware/header-plan.js';

const TEXT = 'text/plain; charset=utf-8';

/** Precomputed answer: the same headers object is handed to every `writeHead` (Node only reads it). */
export interface Canned {
  readonly status: number;
  readonly body: Buffer;
  readonly plain: OutgoingHttpHeaders;
  readonly secure: OutgoingHttpHeaders;
  /** A plan that depends on the request (`HeaderPlan.dynamic`): applied to a copy of `base` when sent. */
  readonly dynamic: HeaderPlan | null;
  /** The headers before the plan. */
  readonly base: OutgoingHttpHeaders;
}

/** Precomputes an answer of the site with its `headers` applied, for plain and TLS connections. */
export function canned(plan: HeaderPlan, status: number, body: string, extra: OutgoingHttpHeaders = {}): Canned {
  const { bytes, base } = answerHead(status, body, extra);
  const plain = { ...base };
  const secure = { ...base };
  if (!plan.dynamic) {
    plan.plain(plain, status);
    plan.secure(secure, status);
  }
  return { status, body: bytes, plain, secure, dynamic: plan.dynamic ? plan : null, base };
}

/** The body and the headers of an answer before the site's `header` plan. */
export function answerHead(
  status: number,
  body: string,
  extra: OutgoingHttpHeaders = {},
): { bytes: Buffer; base: OutgoingHttpHeaders } {
  // 1xx, 204 and 304 carry neither a body nor Content-Length (RFC 9110 §8.6).
  const bodiless = status < 200 || status === 204 || status === 304;
  const bytes = Buffer.from(bodiless ? '' : body);
  const base: OutgoingHttpHeaders = bodiless ? { ...extra } : { 'content-length': bytes.length, ...extra };
  if (bytes.length > 0 && base['content-type'] === undefined) base['content-type'] = TEXT;
  return { bytes, base };
}

/** Writes a precomputed answer (a dynamic plan's headers built for this request). */
export function send(req: IncomingMessage, res: ServerResponse, answer: Canned, ctx: RequestContext): void {
  const plan = answer.dynamic;
  if (plan === null) {
    res.writeHead(answer.status, ctx.secure ? answer.secure : answer.plain).end(answer.body);
    return;
  }
  const headers = { ...answer.base };
  plan.editFor(req, ctx)(headers, answer.status);
  res.writeHead(answer.status, headers).end(answer.body);
}
