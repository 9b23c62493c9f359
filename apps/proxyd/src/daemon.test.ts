import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { defaultGlobalOptions } from '@proxyd/model';
import { createLogging } from '@proxyd/telemetry';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Daemon, type DaemonOptions, startDaemon } from './daemon.js';

let dir: string;
let daemon: Daemon | undefined;
let lines: Array<Record<string, unknown>>;
let raw: string[];

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'proxyd-daemon-'));
  lines = [];
  raw = [];
});
afterEach(async () => {
  await daemon?.close();
  daemon = undefined;
  await rm(dir, { recursive: true, force: true });
});

function start(options: Partial<DaemonOptions> = {}) {
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n')) {
        if (!line) continue;
        raw.push(line);
        lines.push(JSON.parse(line));
      }
      done();
    },
  });
  const logging = createLogging('info', sink);
  return startDaemon({
    config: { global: { ...defaultGlobalOptions(), http_port: 0, admin: '127.0.0.1:0' }, sites: [] },
    configPath: null,
    adminToken: 'tok',
    stateDir: path.join(dir, 'state'),
    logger: logging.root,
    logging,
    ...options,
  });
}

function post(port: number, p: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path: p, method: 'POST', headers: { authorization: 'Bearer tok' } },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => {
          body += c.toString();
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('startDaemon', () => {
  it('without a Proxyfile has no config watcher: POST /reload is 501 and there is no SIGHUP reload', async () => {
    daemon = await start();
    expect(daemon.reload).toBeUndefined();
    const res = await post(daemon.adminAddress.port, '/reload');
    expect(res.status).toBe(501);
    expect(JSON.parse(res.body)).toEqual({ error: 'reload not supported — config watcher not active' });
  });

  it('starts despite a corrupt state file: logs the error and keeps a copy', async () => {
    await rm(path.join(dir, 'state'), { recursive: true, force: true });
    const { mkdir } = await import('node:fs/promises');
    await mkdir(path.join(dir, 'state'));
    await writeFile(path.join(dir, 'state', 'routes.json'), '{"format":"proxyd-routes/1","routes":[{');
    daemon = await start();
    const error = lines.find((l) => l.target === 'proxy::store' && l.level === 'error');
    expect(String(error?.msg)).toMatch(/state file is corrupt/);
    expect(String(error?.reason)).toMatch(/not valid JSON/);
    const names = await readdir(path.join(dir, 'state'));
    expect(names.some((n) => n.startsWith('routes.json.corrupt-'))).toBe(true);
  });

  it('loads the valid routes of a state file with a bad one, and says how many were left out', async () => {
    await rm(path.join(dir, 'state'), { recursive: true, force: true });
    const { mkdir } = await import('node:fs/promises');
    await mkdir(path.join(dir, 'state'), { mode: 0o777 });
    const routes = [
      { domain: 'good.test', upstream: '127.0.0.1:9', tls: false, source: null },
      { domain: 'a..b', upstream: '127.0.0.1:9', tls: false, source: null },
    ];
    await writeFile(path.join(dir, 'state', 'routes.json'), JSON.stringify({ format: 'proxyd-routes/1', routes }));
    daemon = await start();
    const error = lines.find((l) => l.target === 'proxy::store' && l.level === 'error');
    expect(String(error?.msg)).toBe(
      'state file has routes that are not valid: 1 left out, 1 loaded (the file as it was is kept)',
    );
    // The open state dir was tightened, and said so in a JSON line of the store's target.
    const warning = lines.find((l) => l.target === 'proxy::store' && l.level === 'warn');
    expect(warning).toBeDefined();
  });

  it('every container-discovery line names its target once (it was `"target":"proxy::docker"` twice)', async () => {
    daemon = await start({ dockerHost: 'unix:///nonexistent/proxyd-daemon-test/docker.sock' });
    const docker = raw.filter((line) => line.includes('"proxy::docker"'));
    // The app's own line (the socket chosen) and the container source's (the runtime does not answer).
    expect(docker.some((line) => line.includes('container discovery on'))).toBe(true);
    expect(docker.some((line) => line.includes('container runtime:'))).toBe(true);
    for (const line of raw) expect(line.match(/"target":/g) ?? [], line).toHaveLength(1);
  });
});
