import { mkdir, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { text } from 'node:stream/consumers';
import { type Config, defaultGlobalOptions, emptySite } from '@proxyd/model';
import type { RequestContext } from '@proxyd/proxy-core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ANALYTICS_TARGET, type AnalyticsWiring, createAnalyticsWiring } from './wiring.js';

const config: Config = { global: { ...defaultGlobalOptions(), geoip_db: null }, sites: [] };
const PAGE = '<html><head><title>t</title></head><body></body></html>';
const HOST = 'shop.example';
const ctx = (host = HOST): RequestContext => ({
  domain: host,
  host,
  path: '/',
  clientIp: '198.51.100.1',
  secure: false,
  site: emptySite([]),
});

let dir = '';
const wirings: AnalyticsWiring[] = [];
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'proxyd-analytics-wiring-'));
});
afterEach(async () => {
  for (const w of wirings.splice(0)) await w.close();
  await rm(dir, { recursive: true, force: true });
});

async function wiring(options: Parameters<typeof createAnalyticsWiring>[1]): Promise<AnalyticsWiring> {
  const w = await createAnalyticsWiring(config, options);
  wirings.push(w);
  return w;
}

/** The token the wiring embeds in an HTML page for HOST. */
async function tokenOf(w: AnalyticsWiring): Promise<string> {
  const req = { method: 'GET', headers: {} } as IncomingMessage;
  const t = w.hooks.transformResponse?.(ctx(), req, 200, { 'content-type': 'text/html' });
  if (!t) throw new Error('no injector');
  const body = new PassThrough();
  body.end(PAGE);
  const html = await text(body.pipe(t));
  const m = /data-t="([^"]+)"/.exec(html);
  if (!m) throw new Error(`no token in ${html}`);
  return m[1] as string;
}

/** Posts a beacon with `token` through the wiring's intercept hook on a loopback server; the status. */
async function beacon(w: AnalyticsWiring, token: string): Promise<number> {
  const server = http.createServer((req: IncomingMessage, res: ServerResponse) => {
    if (!w.hooks.intercept?.(req, res, { ...ctx(), path: '/_proxyd/collect' })) res.writeHead(500).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const { port } = server.address() as AddressInfo;
    return await new Promise<number>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/_proxyd/collect' }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end(JSON.stringify({ t: token, m: [{ n: 'LCP', v: 1200 }] }));
    });
  } finally {
    await new Promise((r) => server.close(r));
  }
}

describe('createAnalyticsWiring', () => {
  it('keeps the token key in <state_dir>/analytics.key (0600): a page served before a restart still reports', async () => {
    const stateDir = path.join(dir, 'state');
    await mkdir(stateDir);
    const before = await wiring({ stateDir });
    const token = await tokenOf(before);
    const file = path.join(stateDir, 'analytics.key');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(await readFile(file)).toHaveLength(32);
    await before.close();
    const after = await wiring({ stateDir });
    expect(await beacon(after, token)).toBe(204);
    // Another state dir (another key) refuses it.
    const other = await wiring({ stateDir: dir });
    expect(await beacon(other, token)).toBe(403);
  });

  it('counts requests dropped past the domain cap and warns once under proxy::analytics', async () => {
    const lines: Array<Record<string, unknown>> = [];
    // The daemon gives a logger bound to ANALYTICS_TARGET; this one records what the wiring says.
    const logger = { warn: (fields: Record<string, unknown>, msg: string) => lines.push({ ...fields, msg }) };
    const w = await wiring({ logger, maxDomains: 2 });
    const record = (host: string) => ({
      host,
      domain: host,
      analytics: true,
      method: 'GET',
      path: '/',
      status: 200,
      bytesSent: 0,
      durationMs: 1,
      clientIp: '198.51.100.1',
      referer: undefined,
      userAgent: undefined,
      contentType: undefined,
      startedAt: 0,
    });
    for (const host of ['a.example', 'b.example', 'c.example', 'd.example', 'c.example'])
      w.hooks.onRequest?.(record(host));
    expect(w.droppedRequests()).toBe(3);
    expect(w.reader.list().map((s) => s.domain)).toEqual(['a.example', 'b.example']);
    const warnings = lines.filter((l) => /domain cap/.test(String(l.msg)));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ max_domains: 2, host: 'c.example' });
    expect(ANALYTICS_TARGET).toBe('proxy::analytics');
  });
});
