// Issue 22: the dashboard's listener as the daemon wires it, with its built UI,
// reading in-process (the admin API's rate limit untouched).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import type { HistoryReader, LiveSnapshot } from '@proxyd/dashboard';
import { createLogging } from '@proxyd/telemetry';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Daemon, loadProxyfile, startDaemon } from './daemon.js';
import { startDashboardListener } from './dashboard.js';

// bcrypt (cost 4) of "correct horse".
const HASH = '$2b$04$E3wV7lSkEKVhqBXk6fNceOPrI2aFyCXocr3NF.ID3jJr7bTBwxTTi';
const ALICE = `Basic ${Buffer.from('alice:correct horse').toString('base64')}`;
const WRONG = `Basic ${Buffer.from('alice:hunter2-guess').toString('base64')}`;

function request(
  port: number,
  options: { path?: string; host?: string; headers?: http.OutgoingHttpHeaders } = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path: options.path ?? '/',
        headers: { ...(options.host ? { host: options.host } : {}), ...options.headers },
        agent: false,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** A pino logger whose lines are kept, parsed. */
function capturedLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _e, done) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level: 'info' }, sink), lines };
}

const emptyHistory: HistoryReader = {
  domains: () => ['shop.example'],
  timeseries: (_d, range) => [
    { t: range.from, page_views: 4, visitors: 2, requests: 9, bot_requests: 1, bytes_sent: 10 },
  ],
  totals: () => ({
    page_views: 4,
    visitors: 2,
    requests: 9,
    bot_requests: 1,
    bytes_sent: 10,
    status: { s1xx: 0, s2xx: 9, s3xx: 0, s4xx: 0, s5xx: 0, other: 0 },
  }),
  breakdown: () => [{ key: '/', page_views: 4 }],
  vitals: () => [],
};

describe('startDashboardListener', () => {
  it('serves the built page and its bundle behind the credentials, and logs refusals at most once a minute', async () => {
    const { logger, lines } = capturedLogger();
    let now = 1_000_000;
    const listener = await startDashboardListener({
      dashboard: {
        address: '127.0.0.1:0',
        basic_auth: { realm: 'proxyd dashboard', users: [{ user: 'alice', hash: HASH }] },
      },
      history: emptyHistory,
      live: { list: () => [], get: () => undefined },
      logger,
      now: () => now,
    });
    try {
      const { port } = listener.address;
      expect((await request(port)).status).toBe(401);
      const page = await request(port, { headers: { authorization: ALICE } });
      expect(page.status).toBe(200);
      const script = /<script src="(\/assets\/dashboard\.js\?v=[\w-]+)" defer><\/script>/.exec(page.body)?.[1] ?? '';
      const style = /<link rel="stylesheet" href="(\/assets\/dashboard\.css\?v=[\w-]+)">/.exec(page.body)?.[1] ?? '';
      expect(script).toMatch(/^\/assets\//);
      expect(style).toMatch(/^\/assets\//);
      const js = await request(port, { path: script, headers: { authorization: ALICE } });
      expect(js.status).toBe(200);
      expect(js.headers['content-type']).toBe('text/javascript; charset=utf-8');
      // uPlot's license travels in the bundle.
      expect(js.body).toContain('Permission is hereby granted, free of charge');
      expect((await request(port, { path: style, headers: { authorization: ALICE } })).status).toBe(200);
      const totals = await request(port, { path: '/api/stats/shop.example/totals', headers: { authorization: ALICE } });
      expect(JSON.parse(totals.body)).toMatchObject({ domain: 'shop.example', page_views: 4, visitors: 2 });

      expect((await request(port, { headers: { authorization: WRONG } })).status).toBe(401);
      expect((await request(port, { headers: { authorization: WRONG } })).status).toBe(401);
      now += 61_000;
      expect((await request(port, { headers: { authorization: WRONG } })).status).toBe(401);
      const refusals = lines.filter(
        (l) => typeof l.msg === 'string' && l.msg.startsWith('dashboard credentials refused'),
      );
      expect(refusals.map((l) => [l.level, l.refused])).toEqual([
        [40, 1],
        [40, 2],
      ]);
      // Never the credentials, in clear or encoded.
      expect(JSON.stringify(lines)).not.toContain('hunter2');
      expect(JSON.stringify(lines)).not.toContain(WRONG.slice(6));
      expect(lines.some((l) => l.msg === `dashboard listening on http://127.0.0.1:${port}/`)).toBe(true);
      expect(lines.some((l) => String(l.msg).includes('beyond loopback'))).toBe(false);
    } finally {
      await listener.close();
    }
  });

  it('warns when it listens beyond loopback over plain HTTP', async () => {
    const { logger, lines } = capturedLogger();
    const listener = await startDashboardListener({
      dashboard: { address: '0.0.0.0:0', basic_auth: { realm: 'r', users: [{ user: 'alice', hash: HASH }] } },
      history: null,
      live: { list: () => [], get: () => undefined },
      logger,
    });
    await listener.close();
    expect(lines.some((l) => l.level === 40 && String(l.msg).includes('credentials cross the network in clear'))).toBe(
      true,
    );
  });
});

describe('the daemon with `dashboard` in the Proxyfile', () => {
  let dir: string;
  let daemon: Daemon;
  let upstream: http.Server;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'proxyd-dashboard-daemon-'));
    upstream = http.createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end('<!doctype html><html><head><title>t</title></head><body>hello</body></html>');
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const up = (upstream.address() as AddressInfo).port;
    const proxyfile = path.join(dir, 'Proxyfile');
    await writeFile(
      proxyfile,
      `{\n\tauto_https off\n\tdashboard :9190 {\n\t\tbasic_auth alice ${HASH}\n\t}\n}\n\napp.test {\n\treverse_proxy 127.0.0.1:${up}\n}\n`,
    );
    const config = await loadProxyfile(proxyfile);
    expect(config.global.dashboard?.address).toBe('127.0.0.1:9190');
    const dashboard = {
      ...(config.global.dashboard as NonNullable<typeof config.global.dashboard>),
      address: '127.0.0.1:0',
    };
    config.global = { ...config.global, http_port: 0, admin: '127.0.0.1:0', dashboard };
    const logging = createLogging('error', new Writable({ write: (_c, _e, done) => done() }));
    daemon = await startDaemon({
      config,
      configPath: proxyfile,
      adminToken: 'dashboard-daemon-test-token-0123456789',
      stateDir: path.join(dir, 'state'),
      docker: false,
      bindHost: '127.0.0.1',
      logger: logging.root,
      logging,
    });
  });

  afterAll(async () => {
    await daemon?.close(0);
    await new Promise<void>((resolve) => upstream?.close(() => resolve()));
    await rm(dir, { recursive: true, force: true });
  });

  it('shows live traffic in-process, and 70 dashboard calls leave the admin API its 60 a minute', async () => {
    const port = (daemon.dashboardAddress as { port: number }).port;
    for (let i = 0; i < 3; i++) {
      expect((await request(daemon.httpAddress.port, { host: 'app.test', path: `/p${i}` })).status).toBe(200);
    }
    const realtime = await request(port, { path: '/api/realtime/app.test', headers: { authorization: ALICE } });
    expect(realtime.status).toBe(200);
    const snapshot = (JSON.parse(realtime.body) as { snapshot: LiveSnapshot }).snapshot;
    expect(snapshot.page_views_1m).toBe(3);
    expect(snapshot.top_pages.map((p) => p.path).sort()).toEqual(['/p0', '/p1', '/p2']);
    for (let i = 0; i < 70; i++) {
      const sites = await request(port, { path: '/api/stats', headers: { authorization: ALICE } });
      expect(sites.status).toBe(200);
      // History is on by default: the store is read in-process too.
      expect(JSON.parse(sites.body)).toMatchObject({ history: true });
      expect(JSON.parse(sites.body).domains).toContain('app.test');
    }
    const admin = await request(daemon.adminAddress.port, {
      path: '/routes',
      headers: { authorization: 'Bearer dashboard-daemon-test-token-0123456789' },
    });
    expect(admin.status).toBe(200);
  });
});
