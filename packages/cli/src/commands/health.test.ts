import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { checkHealth } from './health.js';

// Issue 35: the container image's HEALTHCHECK runs `proxyd health`.
describe('proxyd health', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'proxyd-health-'));
  let status = 200;
  const seen: { method: string | undefined; url: string | undefined; authorization: string | undefined }[] = [];
  const server = http.createServer((req, res) => {
    seen.push({ method: req.method, url: req.url, authorization: req.headers.authorization });
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(status === 200 ? '{"status":"ok","uptime_secs":12}' : '{"error":"internal"}');
  });
  let port = 0;
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });
  afterEach(() => {
    status = 200;
    seen.length = 0;
    vi.unstubAllEnvs();
  });

  it("asks GET /health at the Proxyfile's admin address, without a token, and says ok", async () => {
    vi.stubEnv('PROXY_ADMIN_TOKEN', 'a-token-that-must-not-travel');
    const file = path.join(dir, 'Proxyfile');
    writeFileSync(file, `{\n\tadmin 127.0.0.1:${port}\n}\n`);
    vi.stubEnv('PROXY_CONFIG', file);
    expect(await checkHealth({})).toBe(`ok, up 12 s (127.0.0.1:${port} (the admin option of ${file}))`);
    expect(seen).toEqual([{ method: 'GET', url: '/health', authorization: undefined }]);
  });

  it('a status other than 200 or nothing listening is unhealthy, with the reason', async () => {
    status = 500;
    await expect(checkHealth({ admin: `127.0.0.1:${port}` })).rejects.toThrow(
      `unhealthy: GET /health at 127.0.0.1:${port} answered 500`,
    );
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const gone = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    await expect(checkHealth({ admin: `127.0.0.1:${gone}` })).rejects.toThrow(
      new RegExp(`^unhealthy: cannot reach the admin API at 127\\.0\\.0\\.1:${gone}: .*ECONNREFUSED`),
    );
  });
});
