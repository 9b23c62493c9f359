import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { directoryLocation, FileServer } from './file-server.js';

/** A raw request (the path exactly as written, which `http.request` would not always keep). */
function raw(port: number, path: string): Promise<{ status: number; location: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, location: res.headers.location }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('FileServer directory redirect (regression: open redirect through `//host`)', () => {
  let base: string;
  let server: http.Server;
  let port: number;

  beforeAll(async () => {
    base = mkdtempSync(join(tmpdir(), 'proxyd-fs-redirect-'));
    mkdirSync(join(base, 'evil.example'));
    mkdirSync(join(base, 'docs', 'v1'), { recursive: true });
    writeFileSync(join(base, 'evil.example', 'index.html'), 'local');
    const files = new FileServer(base);
    server = http.createServer((req, res) => {
      const url = req.url ?? '/';
      const q = url.indexOf('?');
      const path = q < 0 ? url : url.slice(0, q);
      files.serve(req, res, { relPath: path, urlPath: path, query: q < 0 ? '' : url.slice(q + 1) }, () => {});
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await new Promise<void>((r) => server.close(() => r()));
    rmSync(base, { recursive: true, force: true });
  });

  it('never answers a Location that names another host', async () => {
    for (const path of ['//evil.example', '///evil.example', '/\\evil.example', '//\\//evil.example?a=1']) {
      const r = await raw(port, path);
      if (r.status !== 308) {
        // A path the file server does not take as the directory is fine, as long as it is no redirect.
        expect(r.location, path).toBeUndefined();
        continue;
      }
      expect(r.location, path).toMatch(/^\/[^/\\]/);
      expect(new URL(r.location ?? '', 'http://proxy.test/').host, path).toBe('proxy.test');
    }
    const r = await raw(port, '//evil.example?a=1');
    expect(r.status).toBe(308);
    expect(r.location).toBe('/evil.example/?a=1');
  });

  it('still redirects an ordinary directory to its trailing slash, query kept', async () => {
    expect(await raw(port, '/docs/v1?x=2')).toEqual({ status: 308, location: '/docs/v1/?x=2' });
    expect(await raw(port, '/docs')).toEqual({ status: 308, location: '/docs/' });
  });

  it('directoryLocation collapses every leading run of / and \\', () => {
    expect(directoryLocation('/a/b')).toBe('/a/b/');
    expect(directoryLocation('//a')).toBe('/a/');
    expect(directoryLocation('/\\/\\a//b')).toBe('/a//b/');
    expect(directoryLocation('\\a')).toBe('/a/');
  });
});
