import { readFileSync, rmSync } from 'node:fs';
import { isIP } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminCall, waitUntil } from './support/admin.js';
import { type RunningProxyd, request, startProxyd, startUpstream } from './support/proxyd.js';

const RECORDER = fileURLToPath(new URL('./fixtures/network/connect-recorder.mjs', import.meta.url));

/** Every site name the e2e tests use, as Proxyfile sites and as an API route. */
const SITE_NAMES = ['app.test', 'shared.test', 'secure.test', 'app.localhost', 'vitals.localhost', '127.0.0.1'];

function isLoopback(target: string): boolean {
  if (target.startsWith('/')) return true; // a Unix socket
  const host = target.replace(/:\d+$/, '').replace(/^\[|\]$/g, '');
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1';
}

describe('the network rule: with no acme_ca, the names tests use never leave loopback', () => {
  let proxyd: RunningProxyd;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let log = '';
  const entries = () =>
    readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { kind: 'connect' | 'lookup'; target: string });

  beforeAll(async () => {
    upstream = await startUpstream((_req, res) => res.end('up'));
    log = path.join(tmpdir(), `proxyd-connect-${process.pid}-${Date.now()}.log`);
    const sites = [...SITE_NAMES, 'http://probe.test']
      .map((name) => `${name} {\n\treverse_proxy 127.0.0.1:${upstream.port}\n}\n`)
      .join('\n');
    proxyd = await startProxyd({
      autoHttps: 'on',
      sites,
      env: {
        PROXY_ADMIN_TOKEN: ADMIN_TOKEN,
        NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import ${RECORDER}`.trim(),
        PROXYD_CONNECT_LOG: log,
      },
    });
  });

  afterAll(async () => {
    await proxyd?.stop();
    await upstream?.close();
    rmSync(log, { force: true });
  });

  it('every certificate comes from the local CA and every connection attempt goes to loopback', async () => {
    const created = await adminCall(proxyd.adminPort, 'POST', '/routes', {
      domain: 'api.test',
      upstream: `127.0.0.1:${upstream.port}`,
      tls: false,
    });
    expect(created.status).toBe(201);
    const names = [...SITE_NAMES, 'api.test'].sort();
    let rows: { name: string; status: string; issuer: string | null }[] = [];
    await waitUntil(async () => {
      rows = JSON.parse((await adminCall(proxyd.adminPort, 'GET', '/certificates')).body);
      return rows.length === names.length && rows.every((r) => r.status === 'valid');
    }, 20_000);
    expect(rows.map((r) => [r.name, r.issuer])).toEqual(names.map((n) => [n, 'local']));

    // The recorder sees what proxyd does: the proxied request's upstream connection is in the log.
    expect((await request(proxyd.httpPort, { headers: { host: 'probe.test' } })).body).toBe('up');
    const all = entries();
    expect(all).toContainEqual({ kind: 'connect', target: `127.0.0.1:${upstream.port}` });

    // A lookup of an IP literal (a listener binding 0.0.0.0) answers without any network traffic.
    const outside = all.filter((e) => !isLoopback(e.target) && !(e.kind === 'lookup' && isIP(e.target) !== 0));
    expect(outside, 'connection attempts or lookups off loopback').toEqual([]);
  });
});
