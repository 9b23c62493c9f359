import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AdminApp } from './app.js';
import { TOKEN, testApp } from './memory-ports.test-helpers.js';

// Issue 20: slow clients against the admin TCP listener with the default
// timeouts and caps. 1,000 clients per scenario, in a child process
// (`scripts/slow-clients.mjs`) so that the RSS sampled here is the server's.
// Prints one line of figures per scenario (the README's "Slow clients"); run one
// scenario per process (`-t`) for memory figures that earlier scenarios do not blur.
// `SLOW_CLIENTS_WINDOW_MS` (default 45 000) is how long a scenario may hold
// its connections before the driver gives up and reports them as still open.

const WINDOW_MS = Number(process.env.SLOW_CLIENTS_WINDOW_MS ?? 45_000);
const DRIVER = fileURLToPath(new URL('../scripts/slow-clients.mjs', import.meta.url));

interface Report {
  type: 'report';
  scenario: string;
  count: number;
  connected: number;
  cut: number;
  stillOpen: number;
  cutMs: { min: number | null; median: number | null; p99: number | null; max: number | null };
  statuses: Record<string, number>;
  errors: number;
  elapsedMs: number;
}

/** How long after the last connection opened the server's holdings are measured, in ms (well inside the 10 s cuts). */
const HELD_AFTER_MS = 3_000;

// A full collection before each memory reading, so that it counts what is held, not what is not yet collected.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

let app: AdminApp;
let port: number;

beforeAll(async () => {
  // Authenticated requests are not what this measures: the global window is opened wide.
  ({ app } = testApp({ transport: 'auto', rateLimit: { max: 1_000_000, windowMs: 60_000 } }));
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  port = typeof address === 'object' && address !== null ? address.port : 0;
});
afterAll(() => app.close());

/** `n` loopback source addresses 127.0.1.1 … (Linux routes all of 127/8 to lo). */
const loopbacks = (n: number) => Array.from({ length: n }, (_, i) => `127.0.1.${i + 1}`);

function connections(): Promise<number> {
  return new Promise((resolve) => app.server.getConnections((_err, n) => resolve(n)));
}

const mib = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;

/** The server's open connections and memory now, after a full collection. */
async function holdings() {
  gc();
  const { rss, heapUsed, external } = process.memoryUsage();
  return { connections: await connections(), rss, heap: heapUsed + external };
}

/**
 * Runs one scenario. Measures what the server holds `HELD_AFTER_MS` after
 * the last connection opened (connections, and RSS and JS heap + external
 * over the reading before the clients came), and samples its open
 * connections every 100 ms for the peak.
 */
async function run(scenario: string, count: number, addresses: string[]) {
  const before = await holdings();
  let peakConnections = 0;
  const sampler = setInterval(async () => {
    peakConnections = Math.max(peakConnections, await connections());
  }, 100);
  const child = fork(
    DRIVER,
    [JSON.stringify({ scenario, port, count, addresses, windowMs: WINDOW_MS, intervalMs: 2_000, token: TOKEN })],
    { stdio: 'inherit' },
  );
  let held: Promise<Awaited<ReturnType<typeof holdings>>> | undefined;
  const report = await new Promise<Report>((resolve, reject) => {
    child.on('message', (m: { type: string }) => {
      if (m.type === 'connected') held = new Promise((r) => setTimeout(r, HELD_AFTER_MS)).then(holdings);
      else resolve(m as Report);
    });
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`driver exited ${code} without a report`)));
  });
  clearInterval(sampler);
  const h = await (held ?? holdings());
  // Whatever the driver left open is closed by it at the report; give the server a moment to see it.
  for (let i = 0; i < 50 && (await connections()) > 0; i++) await new Promise((r) => setTimeout(r, 100));
  const figures = {
    ...report,
    serverPeakConnections: peakConnections,
    held: {
      afterMs: HELD_AFTER_MS,
      connections: h.connections,
      rssMiB: mib(h.rss - before.rss),
      heapMiB: mib(h.heap - before.heap),
    },
    serverConnectionsAfter: await connections(),
  };
  console.log(`slow-clients ${JSON.stringify(figures)}`);
  return figures;
}

describe('slow admin clients, 1,000 at a time, default timeouts and caps (issue 20)', () => {
  it('silent connections are cut by the idle timeout (10 s)', async () => {
    const f = await run('silent', 1_000, loopbacks(16));
    expect(f.stillOpen).toBe(0);
    expect(f.cutMs.min).toBeGreaterThanOrEqual(9_000);
    expect(f.cutMs.max).toBeLessThan(15_000);
  }, 120_000);

  it('header slowloris is cut by the header timeout (10 s) with a 408', async () => {
    const f = await run('header-trickle', 1_000, loopbacks(16));
    expect(f.stillOpen).toBe(0);
    expect(f.cutMs.max).toBeLessThan(15_000);
    expect(f.statuses['408']).toBe(1_000);
  }, 120_000);

  it('a stalled authenticated body is cut by the idle timeout (10 s)', async () => {
    const f = await run('body-stalled', 1_000, loopbacks(16));
    expect(f.stillOpen).toBe(0);
    expect(f.cutMs.max).toBeLessThan(15_000);
  }, 120_000);

  it('a trickled authenticated body is cut by the request timeout (30 s) with a 408', async () => {
    const f = await run('body-trickle', 1_000, loopbacks(16));
    expect(f.stillOpen).toBe(0);
    expect(f.cutMs.min).toBeGreaterThanOrEqual(29_000);
    expect(f.cutMs.max).toBeLessThan(35_000);
    expect(f.statuses['408']).toBe(1_000);
  }, 120_000);

  it('an unauthenticated trickle gets its 401 and the connection is closed after it', async () => {
    const f = await run('unauth-trickle', 1_000, loopbacks(16));
    expect(f.stillOpen).toBe(0);
    expect(f.statuses['401']).toBe(1_000);
    expect(f.cutMs.max).toBeLessThan(5_000);
  }, 120_000);

  it('1,000 slowloris from one address: 64 are held, the rest are closed at once', async () => {
    const f = await run('header-trickle', 1_000, ['127.0.0.1']);
    expect(f.serverPeakConnections).toBeLessThanOrEqual(64);
    expect(f.statuses.none).toBe(1_000 - 64);
    expect(f.statuses['408']).toBe(64);
  }, 120_000);

  it('1,100 silent connections from 20 addresses: at most 1,024 are held', async () => {
    const f = await run('silent', 1_100, loopbacks(20));
    expect(f.serverPeakConnections).toBeLessThanOrEqual(1_024);
    expect(f.stillOpen).toBe(0);
  }, 120_000);
});
