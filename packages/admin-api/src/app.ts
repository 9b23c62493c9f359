import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance } from 'fastify';
import { HealthResponse } from './schemas.js';

/** What the admin app needs from the process that hosts it. */
export interface AdminAppOptions {
  /** Process start, ms since the epoch (default: now). */
  startedAt?: number;
}

/** Builds the admin Fastify app; the caller listens (TCP and/or Unix socket). */
export function createAdminApp(options: AdminAppOptions = {}): FastifyInstance {
  const startedAt = options.startedAt ?? Date.now();
  const app = Fastify({ logger: false }).withTypeProvider<TypeBoxTypeProvider>();
  app.get('/health', { schema: { response: { 200: HealthResponse } } }, async () => ({
    status: 'ok' as const,
    uptime_secs: Math.floor((Date.now() - startedAt) / 1000),
  }));
  return app;
}
