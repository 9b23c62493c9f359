// Issue 21: what one RequestRecord carries for the metrics — events set by
// the site's steps, the declared request size, a monotonic duration — and
// the server's requests in flight and connections open.
import { createHash } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { markRequest, RequestEvent, type RequestRecord } from './hooks.js';
import { get, onCleanup, site, siteProxy, until, upstream, wait } from './loopback.test-helpers.js';
import { leadingZeroBits } from './middleware/under-attack.js';

/** The records a server hands its `onRequest` hook, and that hook. */
function recorder() {
  const records: RequestRecord[] = [];
  return { records, hooks: { onRequest: (r: RequestRecord) => records.push(r) } };
}

/** Whether `record` carries the RequestEvent bit `bit`. */
const has = (record: RequestRecord | undefined, bit: number) => ((record?.events ?? 0) & bit) !== 0;

describe('RequestRecord for the metrics', () => {
  it('marks a cacheable request MISS, then HIT; a plain request carries no event', async () => {
    const up = await upstream((_q, s) => {
      s.writeHead(200, { 'cache-control': 'max-age=60', 'content-type': 'text/plain' });
      s.end('cached body');
    });
    const { records, hooks } = recorder();
    const { port } = await siteProxy(
      [
        site('c.test', [up.port], (s) => {
          s.cache = { max_size_bytes: 1024 * 1024, ttl_ms: 60_000 };
        }),
        site('plain.test', [up.port]),
      ],
      { hooks },
    );
    expect((await get(port, 'c.test', '/page')).headers['x-cache']).toBe('MISS');
    await wait(20); // the fill completes after the client's last byte
    expect((await get(port, 'c.test', '/page')).headers['x-cache']).toBe('HIT');
    await get(port, 'plain.test', '/');
    await until(() => records.length === 3);
    const [miss, hit, plain] = records;
    expect(has(miss, RequestEvent.CacheMiss) && !has(miss, RequestEvent.CacheHit)).toBe(true);
    expect(has(hit, RequestEvent.CacheHit) && !has(hit, RequestEvent.CacheMiss)).toBe(true);
    expect(plain?.events).toBe(0);
    expect(up.urls).toEqual(['/page', '/']);
  });

  it('marks a request the rate limit refused, and only that one', async () => {
    const up = await upstream();
    const { records, hooks } = recorder();
    const { port } = await siteProxy(
      [
        site('r.test', [up.port], (s) => {
          s.rate_limit = 1;
        }),
      ],
      { hooks },
    );
    const statuses = [(await get(port, 'r.test')).status, (await get(port, 'r.test')).status];
    expect(statuses).toEqual([200, 429]);
    await until(() => records.length === 2);
    expect(records.map((r) => has(r, RequestEvent.RateLimited))).toEqual([false, true]);
  });

  it('marks the under_attack challenge page, a failed solution and a passed one', async () => {
    const up = await upstream();
    const { records, hooks } = recorder();
    const { port } = await siteProxy(
      [
        site('u.test', [up.port], (s) => {
          s.under_attack = { enabled: true, difficulty: 4 };
        }),
      ],
      { hooks },
    );
    const page = await get(port, 'u.test', '/');
    expect(page.status).toBe(503);
    const token = /var T="([^"]+)"/.exec(page.body)?.[1] as string;
    expect(token).toBeTruthy();
    let counter = 0;
    while (leadingZeroBits(createHash('sha256').update(`${token}:${counter}`).digest()) < 4) counter++;
    let wrong = 0;
    while (leadingZeroBits(createHash('sha256').update(`${token}:${wrong}`).digest()) >= 4) wrong++;
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const post = (n: number) =>
      get(port, 'u.test', '/_proxyd/challenge', form, false, 'POST', `token=${token}&counter=${n}`);
    expect((await post(wrong)).status).toBe(403);
    const passed = await post(counter);
    expect(passed.status).toBe(204);
    const cookie = String(passed.headers['set-cookie']).split(';')[0] as string;
    expect((await get(port, 'u.test', '/', { cookie })).status).toBe(200);
    await until(() => records.length === 4);
    const bits = records.map((r) => r.events);
    expect(bits).toEqual([RequestEvent.ChallengeIssued, RequestEvent.ChallengeFailed, RequestEvent.ChallengePassed, 0]);
  });

  it('carries the declared request body size and a monotonic duration', async () => {
    const up = await upstream((req, res) => {
      req.resume();
      req.on('end', () => setTimeout(() => res.end('ok'), 30));
    });
    const { records, hooks } = recorder();
    const { port } = await siteProxy([site('s.test', [up.port])], { hooks });
    await get(port, 's.test', '/', { 'content-type': 'text/plain' }, false, 'POST', 'x'.repeat(1500));
    await get(port, 's.test', '/');
    await until(() => records.length === 2);
    const [post, plain] = records;
    expect(post?.bytesReceived).toBe(1500);
    expect(post?.bytesSent).toBe(2);
    expect(plain?.bytesReceived).toBe(0);
    // 30 ms upstream delay; by the monotonic clock, so a fraction of a ms is kept.
    expect(post?.durationMs).toBeGreaterThanOrEqual(29);
    expect(post?.durationMs).toBeLessThan(5_000);
    expect(Number.isInteger(post?.durationMs)).toBe(false);
  });

  it('carries the query string as sent, without the ?, and none without one', async () => {
    const up = await upstream();
    const { records, hooks } = recorder();
    const { port } = await siteProxy([site('q.test', [up.port])], { hooks });
    await get(port, 'q.test', '/landing?utm_source=news%20letter&utm_medium=email');
    await get(port, 'q.test', '/plain');
    await get(port, 'q.test', '/empty?');
    await until(() => records.length === 3);
    expect(records.map((r) => [r.path, r.query])).toEqual([
      ['/landing', 'utm_source=news%20letter&utm_medium=email'],
      ['/plain', undefined],
      ['/empty', ''],
    ]);
  });

  it('counts requests in flight until their record goes out, and open connections', async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const up = await upstream((_q, s) => void held.then(() => s.end('late')));
    const { records, hooks } = recorder();
    const { server, port } = await siteProxy([site('f.test', [up.port])], { hooks });
    expect(server.stats()).toEqual({ requestsInFlight: 0, openConnections: 0 });
    const idle = net.connect(port, '127.0.0.1');
    onCleanup(() => void idle.destroy());
    await new Promise((resolve) => idle.once('connect', resolve));
    const agent = new http.Agent({ keepAlive: true });
    onCleanup(() => agent.destroy());
    const pending = [get(port, 'f.test', '/a', {}, agent), get(port, 'f.test', '/b', {}, agent)];
    await until(() => up.urls.length === 2);
    expect(server.stats()).toEqual({ requestsInFlight: 2, openConnections: 3 });
    release();
    await Promise.all(pending);
    await until(() => records.length === 2);
    expect(server.stats().requestsInFlight).toBe(0);
    idle.destroy();
    agent.destroy();
    await until(() => server.stats().openConnections === 0);
  });
});

describe('markRequest', () => {
  it('adds bits to what a response already carries', () => {
    const res = {} as http.ServerResponse;
    markRequest(res, RequestEvent.CacheMiss);
    markRequest(res, RequestEvent.RateLimited);
    markRequest(res, RequestEvent.CacheMiss);
    expect(Object.getOwnPropertySymbols(res).map((s) => (res as never)[s])).toEqual([
      RequestEvent.CacheMiss | RequestEvent.RateLimited,
    ]);
  });
});
