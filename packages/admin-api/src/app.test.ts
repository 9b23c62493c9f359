import { describe, expect, it } from 'vitest';
import { createAdminApp } from './app.js';

describe('GET /health', () => {
  it('answers ok with whole seconds of uptime', async () => {
    const app = createAdminApp({ startedAt: Date.now() - 3_500 });
    const res = await app.inject({ method: 'GET', url: '/health' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok', uptime_secs: 3 });
    await app.close();
  });
});
