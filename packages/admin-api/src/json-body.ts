import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AdminError } from './errors.js';

/** Largest accepted request body, in bytes (spec §8: 64 KB). */
export const BODY_LIMIT_BYTES = 64 * 1024;

/**
 * Replaces Fastify's body parsers with one that reads every body as JSON,
 * whatever its Content-Type (so `curl -d` works; only a syntactically invalid
 * Content-Type header is refused, by Fastify, which we map to 400), and only for endpoints that take a body; other endpoints ignore it.
 * An empty body parses to `undefined` ("request body is empty" when the
 * endpoint needs one). Object keys `__proto__` and `constructor` stay plain
 * data: the schemas reject unknown keys.
 */
export function installJsonBodyParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  const parse = (request: FastifyRequest, body: string | Buffer, done: (err: Error | null, body?: unknown) => void) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (request.routeOptions.schema?.body === undefined || text.length === 0) {
      done(null, undefined);
      return;
    }
    try {
      done(null, JSON.parse(text));
    } catch (error) {
      done(new AdminError('ADMIN_INVALID_JSON', (error as Error).message));
    }
  };
  const options = { parseAs: 'string' as const, bodyLimit: BODY_LIMIT_BYTES };
  app.addContentTypeParser('*', options, parse);
}
