import http from 'node:http';
import net from 'node:net';
import { type StartedRedis, startRedis } from '@proxyd/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminCall } from './support/admin.js';
import { type RunningProxyd, startProxyd, startUpstream } from './support/proxyd.js';

// Issue 31 with workers: two built daemons on one real redis-server, each with `--workers 2` (the flag wins
// over PROXY_WORKERS, so `pnpm test`'s PROXY_WORKERS=1 pass runs it with two as well). Each request goes over
// a keep-alive connection pinned to one worker of one node: a connection stays with the worker that accepted
// it, and which worker that is is read from the access-log line of a request to a third site (probe.localhost,
// neither limited nor counted with the others).
// - History: the minute rollups of both workers of node A reach node B's GET /stats and back; a client
//   (address and user agent) seen by all four workers counts once.
// - `rate_limit_scope fleet`: both workers of both nodes count against one `rate_limit 4/s`.

const CHROME =
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36';
const PAGE = '<!doctype html><html><head><title>p</title></head><body>hello</body></html>';
const MINUTE = 60_000;
const LIMIT = 4;
const PREFIX = 'w2';

/** A keep-alive connection from `address` to one worker of one node. */
interface Pinned {
  node: RunningProxyd;
  worker: number;
  address: string;
  agent: http.Agent;
  socket: net.Socket;
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  socket: net.Socket;
}

/** One request from `address` through `agent` to the node's HTTP port; resolves with the socket it went on. */
function send(
  node: RunningProxyd,
  agent: http.Agent,
  address: string,
  path: string,
  headers: http.OutgoingHttpHeaders,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port: node.httpPort, localAddress: address, agent, path, headers },
      (res) => {
        res.resume();
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, socket: req.socket as net.Socket }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** Sends on a pinned connection; the answer must come on that connection (else the pin was lost). */
async function on(pin: Pinned, host: string, path: string, headers: http.OutgoingHttpHeaders = {}): Promise<Answer> {
  const answer = await send(pin.node, pin.agent, pin.address, path, { host, ...headers });
  expect(answer.socket, `worker ${pin.worker}'s connection from ${pin.address} was kept`).toBe(pin.socket);
  return answer;
}

let probes = 0;

/** The worker whose access-log line has `path` (its line reaches the node's output maybe after the response). */
async function workerOf(node: RunningProxyd, path: string): Promise<number> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    for (const line of node.output().split('\n')) {
      if (!line.includes('"target":"proxy::access"') || !line.includes(`"path":"${path}"`)) continue;
      return (JSON.parse(line) as { worker: number }).worker;
    }
    if (Date.now() > deadline) throw new Error(`no access-log line for ${path}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** One keep-alive connection from `address` to each of `node`'s two workers (new connections until both answered). */
async function pin(node: RunningProxyd, address: string): Promise<Pinned[]> {
  const pins = new Map<number, Pinned>();
  for (let i = 0; i < 40 && pins.size < 2; i++) {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const path = `/pin-${++probes}`;
    const { status, socket } = await send(node, agent, address, path, { host: 'probe.localhost' });
    expect(status).toBe(200);
    const worker = await workerOf(node, path);
    if (pins.has(worker)) agent.destroy();
    else pins.set(worker, { node, worker, address, agent, socket });
  }
  expect(pins.size, `connections from ${address} reached both workers`).toBe(2);
  return [...pins.values()].sort((x, y) => x.worker - y.worker);
}

/** `HGET key field` over RESP on one connection to Redis (polled: a `redis-cli` per read is slow beside a CPU hog). */
function redisReader(port: number) {
  const socket = net.connect(port, '127.0.0.1');
  let buffered = '';
  let waiting: ((reply: string | null) => void) | null = null;
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    const nil = buffered.startsWith('$-1\r\n');
    const bulk = /^\$(\d+)\r\n/.exec(buffered);
    if (!nil && (bulk === null || buffered.length < bulk[0].length + Number(bulk[1]) + 2)) return;
    const reply = nil || bulk === null ? null : buffered.slice(bulk[0].length, bulk[0].length + Number(bulk[1]));
    buffered = '';
    const resolve = waiting;
    waiting = null;
    resolve?.(reply);
  });
  const arg = (s: string) => `$${Buffer.byteLength(s)}\r\n${s}\r\n`;
  return {
    hget(key: string, field: string): Promise<string | null> {
      return new Promise((resolve) => {
        waiting = resolve;
        socket.write(`*3\r\n${arg('HGET')}${arg(key)}${arg(field)}`);
      });
    },
    close: () => socket.destroy(),
  };
}

describe('issue 31: fleet history and fleet rate limits with two workers per node (built daemons)', () => {
  let redis: StartedRedis;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  const nodes: RunningProxyd[] = [];
  const agents: http.Agent[] = [];

  beforeAll(async () => {
    redis = await startRedis();
    upstream = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
    });
    const sites = [
      `http://site.localhost {\n\treverse_proxy 127.0.0.1:${upstream.port}\n}\n`,
      `http://limited.localhost {\n\trate_limit ${LIMIT}/s\n\trespond "ok"\n}\n`,
      'http://probe.localhost {\n\trespond "probe"\n}\n',
    ].join('\n');
    nodes.push(
      ...(await Promise.all(
        [0, 1].map(() =>
          startProxyd({
            global: `\tstorage redis ${redis.url} {\n\t\tkey_prefix ${PREFIX}\n\t\trate_limit_scope fleet\n\t}\n`,
            sites,
            args: ['--workers', '2'],
            env: {
              PROXY_ADMIN_TOKEN: ADMIN_TOKEN,
              PROXYD_HISTORY_FLUSH_MS: '250',
              PROXY_LOG: 'info,proxy::access=info',
            },
          }),
        ),
      )),
    );
  });
  afterAll(async () => {
    for (const agent of agents) agent.destroy();
    await Promise.all(nodes.map((node) => node.stop()));
    await upstream?.close();
    await redis?.stop();
  });

  /** Pins from `address` to both workers of both nodes: [A0, A1, B0, B1]. */
  async function pinAll(address: string): Promise<Pinned[]> {
    const [a, b] = nodes as [RunningProxyd, RunningProxyd];
    const pins = [...(await pin(a, address)), ...(await pin(b, address))];
    agents.push(...pins.map((p) => p.agent));
    return pins;
  }

  it('both workers of each node reach the other node’s /stats; a client seen by all four workers counts once', async () => {
    const since = Math.floor(Date.now() / MINUTE) * MINUTE;
    const [a, b] = nodes as [RunningProxyd, RunningProxyd];
    // Client x (127.0.0.2, one user agent) views a page of its own on each worker, 3 times; client y
    // (127.0.0.3) the same pages once each. Two visitors; eight if each worker's were added.
    const names = ['/a0', '/a1', '/b0', '/b1'];
    for (const [address, agent, times] of [
      ['127.0.0.2', 'x', 3],
      ['127.0.0.3', 'y', 1],
    ] as const) {
      const pins = await pinAll(address);
      for (const [i, p] of pins.entries()) {
        for (let n = 0; n < times; n++) {
          const headers = { 'user-agent': `${CHROME} ${agent}`, accept: 'text/html' };
          expect((await on(p, 'site.localhost', names[i] as string, headers)).status).toBe(200);
        }
      }
    }
    // GET /analytics stays this node's (both its workers): A counts A's pages only.
    const live = JSON.parse((await adminCall(a.adminPort, 'GET', '/analytics/site.localhost')).body) as {
      top_pages: Array<{ path: string; views: number }>;
    };
    expect([...live.top_pages].sort((x, y) => (x.path < y.path ? -1 : 1))).toEqual([
      { path: '/a0', views: 4 },
      { path: '/a1', views: 4 },
    ]);
    const totals = async (node: RunningProxyd) => {
      const res = await adminCall(
        node.adminPort,
        'GET',
        `/stats/site.localhost/totals?from=${since}&to=${Date.now() + MINUTE}`,
      );
      return res.status === 200 ? (JSON.parse(res.body) as { page_views: number; visitors: number }) : null;
    };
    // Polled every 2.5 s (the admin API allows 60 requests a minute) until the minute ended and was exchanged.
    const until = Date.now() + 90_000;
    let seen: Awaited<ReturnType<typeof totals>>[] = [];
    for (;;) {
      seen = await Promise.all([a, b].map(totals));
      if (seen.every((t) => t !== null && t.page_views >= 16)) break;
      if (Date.now() > until) throw new Error(`the fleet's views never showed: ${JSON.stringify(seen)}`);
      await new Promise((r) => setTimeout(r, 2_500));
    }
    for (const t of seen) expect(t).toMatchObject({ page_views: 16, visitors: 2 });
    for (const node of [a, b]) {
      const pages = JSON.parse(
        (await adminCall(node.adminPort, 'GET', `/stats/site.localhost/breakdown/pages?from=${since}`)).body,
      ) as { items: Array<{ key: string; page_views: number }> };
      expect(pages.items).toEqual(names.map((key) => ({ key, page_views: 4 })));
    }
  }, 120_000);

  it(`rate_limit ${LIMIT}/s with rate_limit_scope fleet: one admission per worker of each node, then 429`, async () => {
    const reader = redisReader(redis.port);
    try {
      // A round must fit one 1-second window (epoch seconds, the limit's window on every node); one that a
      // busy machine stretched past it tells nothing and is run again, with a client address of its own (so
      // no earlier window weighs on it).
      const outcomes: string[] = [];
      for (let round = 0; round < 8; round++) {
        const address = `127.0.0.${20 + round}`;
        const [a0, a1, b0, b1] = (await pinAll(address)) as [Pinned, Pinned, Pinned, Pinned];
        const field = `${LIMIT} limited.localhost ${address}`;
        // Whether the fleet's count of this client in window `w`, as Redis holds it, reached `n` while `w` lasted.
        const fleetCount = async (w: number, n: number) => {
          while (Number((await reader.hget(`${PREFIX}:ratelimit:${w}`, field)) ?? 0) < n) {
            if (Math.floor(Date.now() / 1000) > w) return false;
            await new Promise((resolve) => setTimeout(resolve, 5));
          }
          return true;
        };
        await new Promise((resolve) => setTimeout(resolve, 1000 - (Date.now() % 1000)));
        const w = Math.floor(Date.now() / 1000);
        const statuses: number[] = [];
        const limited = async (pins: Pinned[]) => {
          for (const res of await Promise.all(pins.map((p) => on(p, 'limited.localhost', '/')))) {
            statuses.push(res.status);
            if (res.status === 429) expect(res.headers['retry-after']).toBe('1');
          }
        };
        // Node A's two workers, one request each; once A synced them, node B's two; once B synced its two
        // and read the fleet's four, the next request on either worker of B is over the limit.
        await limited([a0, a1]);
        let fit = await fleetCount(w, 2);
        if (fit) {
          await limited([b0, b1]);
          fit = await fleetCount(w, 4);
        }
        if (fit) {
          await limited([b0]);
          await limited([b1]);
          fit = Math.floor(Date.now() / 1000) === w;
        }
        outcomes.push(`${address}: ${statuses.join(' ')}${fit ? '' : ' (past its window)'}`);
        // The first four are admitted whatever the window: the limit is never below the fleet's count.
        expect(statuses.slice(0, 4), outcomes.join('; ')).toEqual(statuses.slice(0, 4).map(() => 200));
        if (!fit) continue;
        expect(statuses, outcomes.join('; ')).toEqual([200, 200, 200, 200, 429, 429]);
        console.info(`fleet rate limit with workers: ${outcomes.join('; ')}`);
        return;
      }
      throw new Error(`no round fit one second: ${outcomes.join('; ')}`);
    } finally {
      reader.close();
    }
  }, 120_000);
});
