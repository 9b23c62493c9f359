import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminCall } from './support/admin.js';
import { type RunningProxyd, request, startProxyd, startUpstream } from './support/proxyd.js';

// Issue 32: one response cache per node, not per worker. The built daemon
// with two workers (PROXY_WORKERS=2): a response cached through one worker
// is a hit on the other (the upstream is asked once), a PURGE removes it
// from both, and a site's `max_size` bounds what the node holds, not what
// each worker holds. Which worker answered is read from its access-log line.

type Upstream = Awaited<ReturnType<typeof startUpstream>>;

/** The access-log lines so far (each names the worker that answered). */
function accessLines(proxyd: RunningProxyd): string[] {
  return proxyd
    .output()
    .split('\n')
    .filter((line) => line.includes('"target":"proxy::access"'));
}

describe('one response cache for the workers of a node (issue 32)', () => {
  let proxyd: RunningProxyd;
  let upstream: Upstream;
  /** Requests the upstream got, by path. */
  const asked = new Map<string, number>();
  const BODY = 'x'.repeat(6000);

  beforeAll(async () => {
    upstream = await startUpstream((req, res) => {
      const path = req.url ?? '/';
      asked.set(path, (asked.get(path) ?? 0) + 1);
      const body = path.startsWith('/k') ? BODY : 'cacheable';
      res.writeHead(200, { 'content-type': 'text/plain', 'cache-control': 'public, max-age=600' }).end(body);
    });
    proxyd = await startProxyd({
      env: { PROXY_WORKERS: '2', PROXY_ADMIN_TOKEN: ADMIN_TOKEN, PROXY_LOG: 'info,proxy::access=info' },
      sites: `http://cached.localhost {
\tcache
\treverse_proxy 127.0.0.1:${upstream.port}
}

http://bound.localhost {
\tcache {
\t\tmax_size 64KiB
\t}
\treverse_proxy 127.0.0.1:${upstream.port}
}
`,
    });
  });

  afterAll(async () => {
    await proxyd?.stop();
    await upstream?.close();
  });

  /** One request on its own connection (the kernel picks the worker): its X-Cache and the worker that answered. */
  const once = async (host: string, path: string, method = 'GET') => {
    const before = accessLines(proxyd).length;
    const res = await request(proxyd.httpPort, { method, path, headers: { host, connection: 'close' } });
    expect(res.status).toBe(200);
    // The worker's access line reaches us through its stdout, maybe after the response: its line is the next one.
    let lines = accessLines(proxyd);
    for (let i = 0; i < 1000 && lines.length === before; i++) {
      await new Promise((resolve) => setTimeout(resolve, 5));
      lines = accessLines(proxyd);
    }
    const line = lines[before];
    if (line === undefined) throw new Error(`no access-log line for ${method} ${host}${path}`);
    return { cache: String(res.headers['x-cache']), worker: (JSON.parse(line) as { worker: number }).worker };
  };

  /** X-Cache of HEAD requests (which never fill the cache) until each worker answered one, by worker. */
  const probe = async (host: string, path: string) => {
    const seen = new Map<number, string>();
    for (let i = 0; i < 200 && seen.size < 2; i++) {
      const { cache, worker } = await once(host, path, 'HEAD');
      seen.set(worker, cache);
    }
    expect(seen.size, 'both workers answered').toBe(2);
    return seen;
  };

  /**
   * Every worker holds what the index sent before now: a PURGE goes to the
   * index, then to every worker and answers once each applied it, so the
   * index's earlier changes (sent in order on the same channels) are applied.
   */
  const settled = async () => {
    expect((await adminCall(proxyd.adminPort, 'PURGE', '/cache/cached.localhost/barrier')).status).toBe(404);
  };

  it('a response cached through one worker is a hit on the other: the upstream is asked once', async () => {
    const first = await once('cached.localhost', '/page');
    expect(first.cache).toBe('MISS');
    await settled();
    const byWorker = await probe('cached.localhost', '/page');
    expect([...byWorker.values()]).toEqual(['HIT', 'HIT']);
    // GETs too, on both workers, and never a second upstream request.
    const workers = new Set<number>();
    for (let i = 0; i < 200 && workers.size < 2; i++) {
      const { cache, worker } = await once('cached.localhost', '/page');
      expect(cache).toBe('HIT');
      workers.add(worker);
    }
    expect(workers.size).toBe(2);
    expect(asked.get('/page')).toBe(1);
  });

  it('a PURGE removes it from every worker, and the next fill is again shared', async () => {
    const purged = await adminCall(proxyd.adminPort, 'PURGE', '/cache/cached.localhost/page');
    expect(purged.status).toBe(200);
    expect(JSON.parse(purged.body)).toEqual({ purged: true });
    expect([...(await probe('cached.localhost', '/page')).values()]).toEqual(['MISS', 'MISS']);
    expect((await adminCall(proxyd.adminPort, 'PURGE', '/cache/cached.localhost/page')).status).toBe(404);
    expect((await once('cached.localhost', '/page')).cache).toBe('MISS');
    const refilled = asked.get('/page');
    await settled();
    expect([...(await probe('cached.localhost', '/page')).values()]).toEqual(['HIT', 'HIT']);
    expect(asked.get('/page')).toBe(refilled);
  });

  it('max_size bounds what the node holds: 64 KiB of 6 KB bodies is at most 9 entries, whichever worker filled them', async () => {
    // 20 keys filled over both workers: 120 KB of bodies, ~2x the bound.
    const fillers = new Set<number>();
    for (let i = 1; i <= 20; i++) {
      const { cache, worker } = await once('bound.localhost', `/k${i}`);
      expect(cache).toBe('MISS');
      fillers.add(worker);
    }
    expect(fillers.size, 'both workers filled some').toBe(2);
    await settled();
    // What the node holds: the keys a HEAD finds on either worker; both workers agree on each.
    const held: number[] = [];
    for (let i = 20; i >= 1; i--) {
      const byWorker = await probe('bound.localhost', `/k${i}`);
      const results = new Set(byWorker.values());
      expect(results.size, `/k${i}: both workers agree (${[...byWorker.entries()].join(' ')})`).toBe(1);
      if (results.has('HIT')) held.push(i);
    }
    // Each entry is charged its 6000-byte body plus its key, headers and objects (~6.7 KB): 9 fit.
    expect(held.length).toBeGreaterThanOrEqual(8);
    expect(held.length).toBeLessThanOrEqual(9);
    // The most recently stored ones (least recently used leave first).
    expect(held).toEqual(Array.from({ length: held.length }, (_, j) => 20 - j));
  });
});
