import { Type } from 'typebox';
import type { Endpoint } from '../endpoint.js';
import { AdminError } from '../errors.js';
import { PlainText, ReloadResponse, ReloadTooSoon } from '../schemas.js';

/** Minimum time between two reloads, in ms (spec §8). */
export const RELOAD_COOLDOWN_MS = 5_000;

/** `POST /reload`: re-reads the Proxyfile and swaps the route table. */
export const postReload: Endpoint = {
  method: 'POST',
  path: '/reload',
  url: '/reload',
  tag: 'config',
  operationId: 'reload',
  summary: 'Reload the Proxyfile',
  description:
    'Re-reads the Proxyfile and atomically swaps its routes. 5 s cooldown between reloads, consumed by a failed parse too. Parse failure: 400 text/plain with the full error text, running config unchanged. Audit action reload (successful reloads).',
  auth: true,
  responses: {
    200: { description: 'Reloaded', schema: ReloadResponse },
    400: {
      description: 'The Proxyfile failed to parse: the full error text',
      schema: PlainText,
      contentType: 'text/plain; charset=utf-8',
    },
    429: {
      description: 'Cooldown ("reload too soon", with retry_after) or the global rate limit',
      schema: ReloadTooSoon,
      headers: {
        'Retry-After': {
          description: 'Seconds to wait, equal to retry_after',
          schema: Type.Integer({ minimum: 1, description: 'Seconds' }),
        },
      },
    },
  },
  errors: {
    500: 'internal error: the config watcher failed to answer',
    501: 'reload not supported — config watcher not active',
  },
  handler: (ctx) => {
    let last = Number.NEGATIVE_INFINITY;
    return async (_request, reply) => {
      if (ctx.reload === undefined) throw new AdminError('ADMIN_RELOAD_NOT_SUPPORTED');
      const now = ctx.now();
      const wait = last + RELOAD_COOLDOWN_MS - now;
      if (wait > 0 && now >= last) {
        const seconds = Math.max(1, Math.ceil(wait / 1000));
        throw new AdminError('ADMIN_RELOAD_TOO_SOON', undefined, {
          headers: { 'retry-after': String(seconds) },
          extra: { retry_after: seconds },
        });
      }
      last = now;
      const result = await ctx.reload.reload();
      if (!result.ok) return reply.code(400).type('text/plain; charset=utf-8').send(result.errorText);
      ctx.audit('reload', 'proxyfile');
      return { message: result.message };
    };
  },
};
