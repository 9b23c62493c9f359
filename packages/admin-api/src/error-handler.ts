import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { domainProblem } from './domain.js';
import { AdminError, quote } from './errors.js';
import { sourceProblem } from './source.js';
import { upstreamProblem } from './upstream.js';

/** The header every admin response carries: browsers are unsupported (spec §5 rule 3). */
export const CORS_HEADER = ['access-control-allow-origin', 'null'] as const;

interface AjvError {
  instancePath: string;
  keyword: string;
  message?: string;
  params: Record<string, unknown>;
}

function valueAt(body: unknown, pointer: string): unknown {
  let node = body;
  for (const part of pointer.split('/').slice(1)) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return node;
}

/** A body location for messages: `/routes/2/tls` → `routes[2].tls`; the top level is empty. */
function label(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((p, i) => (/^\d+$/.test(p) ? `[${p}]` : i === 0 ? p : `.${p}`))
    .join('');
}

const DOMAIN_AT = /^\/(?:routes\/\d+\/)?domain$/;
const UPSTREAM_AT = /^\/(?:routes\/\d+\/)?upstream$/;

/** Maps a body validation failure to the spec's message for the field it concerns. */
function fromValidation(error: FastifyError, body: unknown): AdminError {
  const first = (error.validation as AjvError[] | undefined)?.[0];
  if (body === undefined) return new AdminError('ADMIN_INVALID_JSON', 'request body is empty');
  if (first === undefined) return new AdminError('ADMIN_INVALID_JSON', error.message);
  const missing = first.keyword === 'required' ? String(first.params.missingProperty) : undefined;
  const pointer = missing === undefined ? first.instancePath : `${first.instancePath}/${missing}`;
  const parent = label(pointer.slice(0, pointer.lastIndexOf('/')));
  const prefix = parent === '' ? '' : `${parent}: `;
  const value = valueAt(body, pointer);
  // The value as sent: the rules are case-insensitive, and lowercasing first would hide a non-ASCII letter.
  const check = (problem: (v: string) => string | undefined, name: string): string => {
    if (missing !== undefined) return `${prefix}${name} is required`;
    if (typeof value !== 'string') return `${prefix}${name} must be a string`;
    return `${prefix}${problem(value) ?? `${quote(value)} ${first.message ?? 'is invalid'}`}`;
  };
  if (DOMAIN_AT.test(pointer)) return new AdminError('ADMIN_INVALID_DOMAIN', check(domainProblem, 'domain'));
  if (UPSTREAM_AT.test(pointer)) return new AdminError('ADMIN_INVALID_UPSTREAM', check(upstreamProblem, 'upstream'));
  if (pointer === '/source') {
    if (missing === undefined && value !== null && typeof value !== 'string') {
      return new AdminError('ADMIN_INVALID_SOURCE', 'source must be a string');
    }
    return new AdminError('ADMIN_INVALID_SOURCE', check(sourceProblem, 'source'));
  }
  const at = label(first.instancePath) || 'body';
  if (first.keyword === 'additionalProperties') {
    return new AdminError(
      'ADMIN_INVALID_JSON',
      `${at} has unknown property ${quote(String(first.params.additionalProperty))}`,
    );
  }
  if (missing !== undefined) return new AdminError('ADMIN_INVALID_JSON', `${prefix}${missing} is required`);
  return new AdminError('ADMIN_INVALID_JSON', `${at} ${first.message ?? 'is invalid'}`);
}

/**
 * Turns anything thrown while handling a request into an `AdminError`:
 * our own errors pass through; Fastify's (body too large, bad JSON, schema
 * validation, bad URL, serialization) map to the spec's envelope messages;
 * everything else is an internal error (`internal error`, without the
 * thrown message, which is logged by the error handler).
 */
export function toAdminError(error: unknown, request: FastifyRequest | undefined): AdminError {
  if (error instanceof AdminError) return error;
  const err = error as Partial<FastifyError> & { serialization?: unknown };
  if (err.serialization !== undefined)
    return new AdminError('ADMIN_SERIALIZE', err.message ?? 'unknown', { cause: error });
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AdminError('ADMIN_BODY_TOO_LARGE', undefined, { cause: error });
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AdminError('ADMIN_INVALID_JSON', err.message ?? 'malformed body', { cause: error });
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AdminError('ADMIN_INVALID_JSON', 'body length does not match Content-Length', { cause: error });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_TYPE':
      return new AdminError('ADMIN_INVALID_JSON', 'invalid Content-Type header', { cause: error });
    case 'FST_ERR_VALIDATION':
      return fromValidation(err as FastifyError, request?.body);
    case 'FST_ERR_BAD_URL':
      return new AdminError('ADMIN_INVALID_URL', 'malformed percent-encoding in the path', { cause: error });
  }
  // Only Fastify's own client errors are the client's fault: a port's error with a 4xx statusCode
  // (an HTTP client's, say) is still an internal error.
  const status = err.statusCode;
  if (
    typeof err.code === 'string' &&
    err.code.startsWith('FST_') &&
    typeof status === 'number' &&
    status >= 400 &&
    status < 500
  ) {
    return new AdminError('ADMIN_BAD_REQUEST', (err.message ?? 'rejected').toLowerCase(), { cause: error });
  }
  // The message of an unexpected error may carry paths, addresses or secrets: it is logged, never sent.
  return new AdminError('ADMIN_INTERNAL', undefined, { cause: error });
}

/** Sends an `AdminError` as the `{error}` envelope with its status and headers. */
export function sendAdminError(reply: FastifyReply, error: AdminError): FastifyReply {
  return reply
    .code(error.statusCode)
    .headers(error.headers)
    .header(CORS_HEADER[0], CORS_HEADER[1])
    .type('application/json; charset=utf-8')
    .send({ error: error.message, ...error.extra });
}

/** The app's one error handler: maps, logs internal errors, sends the envelope. */
export function adminErrorHandler(error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const mapped = toAdminError(error, request);
  if (mapped.statusCode >= 500 && mapped.code !== 'ADMIN_SERIALIZE') {
    request.log.error({ err: error, target: 'proxy::admin' }, 'admin request failed');
  }
  return sendAdminError(reply, mapped);
}
