import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { emptySite, type LogOutput, type LogRoll, type RequestRecord, type RouteSpec, type Site } from '@proxyd/model';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type SiteLogBatch, SiteLogOutputs, SiteLogRecorder, siteLogKey } from './site-log.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'site-log-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const quiet = pino({ level: 'silent' });

function site(host: string, output: LogOutput | null): Site {
  const s = emptySite([{ scheme: null, host, port: null }]);
  s.log = output === null ? null : { output, format: 'json' };
  return s;
}

function route(s: Site): RouteSpec {
  return { domain: s.addresses[0]?.host as string, origin: 'proxyfile', source: null, site: s };
}

function record(domain: string | null, path = '/'): RequestRecord {
  return {
    host: domain ?? 'unknown.example',
    domain,
    analytics: true,
    method: 'GET',
    path,
    status: 200,
    bytesSent: 2,
    durationMs: 1,
    clientIp: '127.0.0.1',
    referer: undefined,
    userAgent: 'test',
    contentType: undefined,
    startedAt: 1_700_000_000_000,
  };
}

const file = (name: string, roll: LogRoll | null = null): LogOutput => ({
  kind: 'file',
  path: path.join(dir, name),
  roll,
});

describe('SiteLogRecorder', () => {
  it('formats lines only for domains whose site logs, and batches them per output', () => {
    const batches: SiteLogBatch[] = [];
    const recorder = new SiteLogRecorder((b) => batches.push(b), { flushMs: 60_000 });
    recorder.setRoutes([
      route(site('a.example.com', file('a.log'))),
      route(site('b.example.com', { kind: 'stdout' })),
      route(site('c.example.com', { kind: 'discard' })),
      route(site('d.example.com', null)),
    ]);
    for (const d of ['a.example.com', 'b.example.com', 'c.example.com', 'd.example.com', null, 'a.example.com']) {
      recorder.onRequest(record(d));
    }
    expect(batches).toEqual([]);
    const batch = recorder.flush();
    expect(batches).toEqual([batch]);
    const byKey = new Map(batch);
    expect([...byKey.keys()].sort()).toEqual([`file:${path.join(dir, 'a.log')}`, 'stdout']);
    expect(byKey.get(`file:${path.join(dir, 'a.log')}`)?.split('\n')).toHaveLength(3);
    expect(JSON.parse(byKey.get('stdout') as string).request.host).toBe('b.example.com');
    expect(recorder.flush()).toBeNull();
  });

  it('sends a batch when it reaches maxBatchBytes, and after flushMs otherwise', async () => {
    const batches: SiteLogBatch[] = [];
    const recorder = new SiteLogRecorder((b) => batches.push(b), { flushMs: 20, maxBatchBytes: 1000 });
    recorder.setRoutes([route(site('a.example.com', { kind: 'stderr' }))]);
    let n = 0;
    while (batches.length === 0) {
      recorder.onRequest(record('a.example.com'));
      n++;
    }
    expect(n).toBeGreaterThan(1);
    expect(batches[0]?.[0]?.[1].split('\n')).toHaveLength(n + 1);
    recorder.onRequest(record('a.example.com'));
    expect(batches).toHaveLength(1);
    await new Promise((r) => setTimeout(r, 60));
    expect(batches).toHaveLength(2);
  });

  it('follows a new route table', () => {
    const recorder = new SiteLogRecorder(() => {}, { flushMs: 60_000 });
    recorder.setRoutes([route(site('a.example.com', { kind: 'stderr' }))]);
    recorder.onRequest(record('a.example.com'));
    recorder.setRoutes([route(site('a.example.com', null))]);
    recorder.onRequest(record('a.example.com'));
    expect(recorder.flush()?.[0]?.[1].split('\n')).toHaveLength(2);
  });
});

describe('SiteLogOutputs', () => {
  it('opens the files of the sites, writes batches to them, and to stdout in whole lines of at most 4096 bytes', async () => {
    const out: string[] = [];
    const outputs = new SiteLogOutputs({ logger: quiet, stdout: (t) => out.push(t) });
    const a = site('a.example.com', file('logs/a.log'));
    await outputs.prepare([a, site('b.example.com', { kind: 'stdout' })]);
    const key = siteLogKey(a.log?.output as LogOutput) as string;
    outputs.writeBatch([
      [key, '{"n":1}\n{"n":2}\n'],
      ['stdout', `${'x'.repeat(3000)}\n${'y'.repeat(3000)}\n${'z'.repeat(5000)}\nshort\n`],
    ]);
    await outputs.close();
    expect(await readFile(path.join(dir, 'logs/a.log'), 'utf8')).toBe('{"n":1}\n{"n":2}\n');
    expect(out.map((t) => t.length)).toEqual([3001, 3001, 5001, 6]);
  });

  it('fails prepare with the site, the path and the OS reason, opening nothing', async () => {
    await writeFile(path.join(dir, 'plain'), '');
    const locked = path.join(dir, 'locked');
    await writeFile(locked, '');
    await chmod(locked, 0o400);
    const outputs = new SiteLogOutputs({ logger: quiet });
    await expect(
      outputs.prepare([site('ok.example.com', file('ok.log')), site('bad.example.com', file('plain/x.log'))]),
    ).rejects.toThrow(
      new RegExp(
        `^site "bad.example.com": log file "${path.join(dir, 'plain/x.log')}" cannot be opened: (EEXIST|ENOTDIR)`,
      ),
    );
    // Nothing was kept open: a line for ok.log is dropped.
    outputs.write(`file:${path.join(dir, 'ok.log')}`, 'dropped\n');
    await outputs.close();
    expect(await readFile(path.join(dir, 'ok.log'), 'utf8')).toBe('');
    if (process.getuid?.() !== 0) {
      await expect(outputs.prepare([site('ro.example.com', file('locked'))])).rejects.toThrow(/EACCES/);
    }
  });

  it('refuses two sites rolling one file differently', async () => {
    const outputs = new SiteLogOutputs({ logger: quiet });
    const roll = { size_bytes: 1000, keep: 1, keep_for_ms: 0, gzip: false };
    await expect(
      outputs.prepare([
        site('a.example.com', file('shared.log', roll)),
        site('b.example.com', file('shared.log', { ...roll, keep: 2 })),
      ]),
    ).rejects.toThrow('sites "a.example.com" and "b.example.com" log to');
    await outputs.prepare([
      site('a.example.com', file('shared.log', roll)),
      site('b.example.com', file('shared.log', roll)),
    ]);
    await outputs.close();
  });

  it('keeps a file no site names open for the linger, then closes it', async () => {
    const outputs = new SiteLogOutputs({ logger: quiet, lingerMs: 30 });
    const a = site('a.example.com', file('a.log'));
    const key = `file:${path.join(dir, 'a.log')}`;
    await outputs.prepare([a]);
    outputs.retain([a]);
    outputs.retain([site('a.example.com', null)]);
    outputs.write(key, 'late\n');
    await outputs.flush();
    await new Promise((r) => setTimeout(r, 80));
    outputs.write(key, 'after close\n');
    await outputs.close();
    expect(await readFile(path.join(dir, 'a.log'), 'utf8')).toBe('late\n');
  });
});
