import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, type RunningProxyd, request, startProxyd, startUpstream } from './support/proxyd.js';

// What each process of the built daemon loads (issue 32): a data-plane
// worker loads only data-plane code, and a one-process daemon loads the
// optional parts (ACME client, container runtime client, SQLite, the
// dashboard) only when its config uses them. Every process records the
// modules it loads through a `node --import` hook given in NODE_OPTIONS
// (tests-e2e/fixtures/module-trace/trace.mjs); proxyd knows nothing of it.

const TRACE = fileURLToPath(new URL('./fixtures/module-trace/trace.mjs', import.meta.url));
/** bcrypt (cost 4) of "correct horse", for the dashboard's basic_auth. */
const HASH = '$2b$04$E3wV7lSkEKVhqBXk6fNceOPrI2aFyCXocr3NF.ID3jJr7bTBwxTTi';

/** What only the control plane, or only some configs, may load: a worker never does. */
const CONTROL_PLANE_ONLY: readonly [string, RegExp][] = [
  ['fastify', /\/node_modules\/fastify\//],
  ['acme-client', /\/node_modules\/acme-client\//],
  ['node:sqlite', /^node:sqlite$/],
  ['dockerode', /\/node_modules\/dockerode\//],
  ['the dashboard', /\/packages\/dashboard\/|\/@proxyd\/dashboard\//],
  ['the Proxyfile parser', /\/packages\/proxyfile\/|\/@proxyd\/proxyfile\//],
  ['the admin API', /\/packages\/admin-api\/|\/@proxyd\/admin-api\//],
  ['typebox', /\/node_modules\/typebox\//],
  // A worker's metrics are plain data the primary renders (packages/telemetry/src/worker-metrics.ts).
  ['prom-client', /\/node_modules\/prom-client\//],
  ['@opentelemetry/api', /\/node_modules\/@opentelemetry\/api\//],
  // Node's bundled undici: only fetch or WebSocket loads it (apps/proxyd/src/http-exports.ts).
  ['undici', /^node:internal\/deps\/undici\/undici$/],
];

/** The modules each process of the tree loaded, by pid. */
async function modulesByPid(dir: string): Promise<Map<number, string[]>> {
  const byPid = new Map<number, string[]>();
  for (const name of await readdir(dir)) {
    const text = await readFile(path.join(dir, name), 'utf8');
    byPid.set(Number.parseInt(name, 10), text.split('\n').filter(Boolean));
  }
  return byPid;
}

const loaded = (modules: readonly string[]) =>
  CONTROL_PLANE_ONLY.filter(([, pattern]) => modules.some((url) => pattern.test(url))).map(([what]) => what);

describe('modules loaded by the built daemon (issue 32)', () => {
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let traceDir: string;
  let proxyd: RunningProxyd | undefined;

  beforeAll(async () => {
    upstream = await startUpstream((_req, res) => res.end('up'));
  });
  afterAll(async () => {
    await upstream.close();
  });

  const start = async (options: Parameters<typeof startProxyd>[0]) => {
    traceDir = await mkdtemp(path.join(tmpdir(), 'proxyd-trace-'));
    proxyd = await startProxyd({
      ...options,
      env: { ...options.env, NODE_OPTIONS: `--import ${TRACE}`, PROXYD_MODULE_TRACE_DIR: traceDir },
    });
    return proxyd;
  };
  const stop = async () => {
    await proxyd?.stop();
    proxyd = undefined;
    await rm(traceDir, { recursive: true, force: true });
  };

  it('a worker loads no Fastify, ACME client, SQLite, dockerode, dashboard, Proxyfile parser, TypeBox or prom-client; no spare by default', async () => {
    // A control plane that loads most of them: the admin API, history (SQLite), a dashboard, the local CA.
    const running = await start({
      args: ['--workers', '2'],
      autoHttps: 'on',
      global: `\tdashboard 127.0.0.1:${await freePort()} {\n\t\tbasic_auth alice ${HASH}\n\t}\n`,
      sites: `http://plain.localhost {\n\treverse_proxy 127.0.0.1:${upstream.port}\n\tencode\n\tcache\n}\n\nhttps://tls.localhost {\n\trespond "tls"\n}\n`,
    });
    try {
      // The data plane's code for each site runs: a proxied request, cached and encoded.
      for (let i = 0; i < 4; i++) {
        const res = await request(running.httpPort, { path: '/', headers: { host: 'plain.localhost' } });
        expect(res.status).toBe(200);
      }
      const workers = [...running.output().matchAll(/"worker":\d+,"pid":(\d+).*"msg":"worker \d+ serving"/g)].map((m) =>
        Number(m[1]),
      );
      expect(workers).toHaveLength(2);
      const byPid = await modulesByPid(traceDir);
      const primary = byPid.get(running.child.pid as number) ?? [];
      // The trace is honest: the primary did load what the workers must not.
      expect(loaded(primary)).toEqual(
        expect.arrayContaining(['fastify', 'node:sqlite', 'the dashboard', 'typebox', 'prom-client']),
      );
      // Importing node:http as an ES module loaded undici (~6 MB a process) until main.ts trimmed its exports.
      expect(loaded(primary)).not.toContain('undici');
      for (const pid of workers) {
        const modules = byPid.get(pid) ?? [];
        expect(modules.some((url) => url.endsWith('/cluster/worker.js'))).toBe(true);
        expect(loaded(modules), `worker ${pid}`).toEqual([]);
        // Forked with a capped young generation (V8 sizes it at start; src/heap-tuning.ts).
        expect(modules[0]).toContain('--max-semi-space-size=2');
      }
      // The primary and its two workers, and no third, idle, spare worker (`--spare-worker` asks for one).
      expect([...byPid.keys()].sort()).toEqual([running.child.pid, ...workers].sort());
    } finally {
      await stop();
    }
  });

  it('one process with automatic HTTPS, containers, history and the dashboard off loads none of them', async () => {
    const running = await start({
      args: ['--workers', '1', '--no-docker'],
      autoHttps: 'off',
      global: '\thistory off\n',
      sites: `http://plain.localhost {\n\treverse_proxy 127.0.0.1:${upstream.port}\n}\n`,
    });
    try {
      const res = await request(running.httpPort, { path: '/', headers: { host: 'plain.localhost' } });
      expect(res.status).toBe(200);
      const byPid = await modulesByPid(traceDir);
      expect([...byPid.keys()]).toEqual([running.child.pid]);
      const modules = byPid.get(running.child.pid as number) ?? [];
      expect(modules.some((url) => /\/node_modules\/fastify\//.test(url))).toBe(true);
      expect(
        loaded(modules).filter((what) =>
          ['acme-client', 'node:sqlite', 'dockerode', 'the dashboard', 'undici'].includes(what),
        ),
      ).toEqual([]);
      expect(
        modules.filter((url) => /\/packages\/certificates\/dist\/index\.js$|\/node_modules\/@peculiar\//.test(url)),
      ).toEqual([]);
      // The Proxyfile's model check and the state file use typebox/schema's validator: typebox/compile
      // would load typebox/value's ~300 modules as well (683 TypeBox modules instead of 537).
      expect(modules.filter((url) => /\/node_modules\/typebox\/build\/(compile|value)\//.test(url))).toEqual([]);
      // The repo's own modules are kept as heap strings: built without comments and one byte a
      // character (scripts/strip-js-comments.mjs), where a commented file with one `…` took two a character.
      const own = modules.filter((url) => /\/(packages\/[^/]+|apps\/proxyd)\/dist\/.*\.js$/.test(url));
      expect(own.length).toBeGreaterThan(100);
      const commented: string[] = [];
      const wide: string[] = [];
      for (const url of own) {
        const text = await readFile(fileURLToPath(url), 'utf8');
        if (/\/\*\*|^\s*\/\/ /m.test(text)) commented.push(url);
        if (/[\u0100-\uffff]/.test(text)) wide.push(url);
      }
      expect(commented).toEqual([]);
      expect(wide).toEqual([]);
      // The admin API's schema compilers load with its first request (packages/admin-api/src/lazy-compilers.ts).
      const compilers = (list: readonly string[]) =>
        // (Fastify's default reply serializer is fast-json-stringify's small lib/serializer.js, not the compiler.)
        list.filter((url) => /\/node_modules\/ajv\/|\/node_modules\/fast-json-stringify\/index\.js$/.test(url));
      expect(compilers(modules)).toEqual([]);
      const admin = await request({ host: running.adminHost, port: running.adminPort }, { path: '/health' });
      expect(admin.status).toBe(200);
      const after = (await modulesByPid(traceDir)).get(running.child.pid as number) ?? [];
      expect(compilers(after)).not.toEqual([]);
    } finally {
      await stop();
    }
  });
});
