// Test helpers: real upstream servers and clients on loopback (not shipped: see package.json "files").
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultReverseProxy, emptySite, type RouteSpec, type Site } from '@proxyd/model';
import { afterEach, onTestFinished } from 'vitest';
import { ProxyServer, type ProxyServerOptions } from './data-plane/proxy-server.js';
import type { RequestRecord } from './hooks.js';
import type { PasswordVerifier } from './middleware/basic-auth.js';
import { createSiteCompiler, type SiteDeps } from './site-handler.js';

/** A real HTTP server on 127.0.0.1 that records what it saw. */
export interface Upstream {
  port: number;
  server: http.Server;
  /** Every request the upstream saw: URL, headers (parsed and raw) and the connection it came on. */
  seen: { method: string; url: string; headers: http.IncomingHttpHeaders; raw: string[]; socket: Socket }[];
  /** The URL of every request in `seen`, in order. */
  urls: string[];
  /** Connections open now. */
  connections: Set<Socket>;
  close(): Promise<void>;
}

const cleanups: (() => Promise<void> | void)[] = [];
const drain = async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
};
// The unit project shares modules between test files (isolate: false): a hook registered at import
// belongs to the first file only. So each test that registers a cleanup also gets its own hook.
afterEach(drain);

/** Runs `fn` after the current test (last registered, first run). */
export function onCleanup(fn: () => Promise<void> | void): void {
  cleanups.push(fn);
  try {
    onTestFinished(drain);
  } catch {
    // Outside a running test (a beforeAll): the afterEach above runs it.
  }
}

/**
 * Starts an upstream (default: answers `hello`) on `port` (default 0: a
 * free one); closed after the test.
 */
export async function upstream(handler: http.RequestListener = (_q, s) => s.end('hello'), port = 0): Promise<Upstream> {
  const seen: Upstream['seen'] = [];
  const urls: string[] = [];
  const connections = new Set<Socket>();
  const server = http.createServer((req, res) => {
    urls.push(req.url ?? '');
    seen.push({
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      raw: req.rawHeaders,
      socket: req.socket,
    });
    handler(req, res);
  });
  server.on('connection', (s: Socket) => {
    connections.add(s);
    s.on('close', () => connections.delete(s));
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  const up: Upstream = {
    port: (server.address() as AddressInfo).port,
    server,
    seen,
    urls,
    connections,
    close: () =>
      new Promise((r) => {
        server.close(() => r());
        server.closeAllConnections();
        for (const s of connections) s.destroy();
      }),
  };
  cleanups.push(() => up.close());
  return up;
}

/** A route for `host` proxying to the given loopback ports (the Site editable). */
export function site(host: string, ports: number[], edit?: (s: Site) => void): RouteSpec {
  const s = emptySite([{ scheme: 'http', host, port: null }]);
  s.handler = defaultReverseProxy(ports.map((port) => ({ host: '127.0.0.1', port })));
  edit?.(s);
  return { domain: host, origin: 'proxyfile', source: null, site: s };
}

/** A ProxyServer listening on a free loopback port; closed after the test. */
export async function proxy(routes: RouteSpec[], options: Omit<ProxyServerOptions, 'routes'> = {}) {
  const server = new ProxyServer({ routes, ...options });
  const { port } = await server.listen(0);
  cleanups.push(() => server.close());
  return { server, port };
}

/** The site middleware's dependencies a test may set (the forwarder is the server's). */
export type TestSiteDeps = Partial<Omit<SiteDeps, 'forwarder'>>;

/**
 * A ProxyServer like {@link proxy} whose sites compile with the full site
 * middleware (`createSiteCompiler`, a random secret, then `deps`); closed
 * after the test.
 */
export function siteProxy(
  routes: RouteSpec[],
  options: Omit<ProxyServerOptions, 'routes' | 'compileSite'> = {},
  deps: TestSiteDeps = {},
) {
  return proxy(routes, { ...options, compileSite: createSiteCompiler({ secret: randomBytes(32), ...deps }) });
}

/** A finished response as a test sees it. */
export interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One request through `port` with Host `host` (default: GET, no agent, no body). */
export function get(
  port: number,
  host: string,
  path = '/',
  headers: http.OutgoingHttpHeaders = {},
  agent: http.Agent | false = false,
  method = 'GET',
  body?: string,
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method, headers: { host, ...headers }, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Resolves after `ms` milliseconds. */
export const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` every 10 ms until it holds; fails after `ms`. */
export async function until(check: () => boolean, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not reached in time');
    await wait(10);
  }
}

/**
 * Sends raw bytes on a new connection and collects everything the server
 * writes until it closes the connection or `ms` passes.
 */
export function rawExchange(port: number, bytes: string | Buffer, ms = 2000): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(bytes));
    let data = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(data);
    }, ms);
    socket.on('data', (d: Buffer) => {
      data += d.toString('latin1');
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(data);
    });
    socket.on('error', () => resolve(data));
  });
}

/**
 * Writes a self-signed certificate (EC P-256, or RSA 2048 with `key:
 * 'rsa'`; valid 2 days) for `names` to a new temporary directory, removed
 * after the test. The first name is the CN; every name is a subjectAltName
 * (IP for an IPv4 address, DNS otherwise). Returns the PEM file paths.
 */
export function selfSigned(names: string[], options: { key?: 'ec' | 'rsa' } = {}): { cert: string; key: string } {
  const dir = mkdtempSync(join(tmpdir(), 'proxyd-tls-'));
  onCleanup(() => rmSync(dir, { recursive: true, force: true }));
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  const san = names.map((n) => (/^[\d.]+$/.test(n) ? `IP:${n}` : `DNS:${n}`)).join(',');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      ...(options.key === 'rsa' ? ['rsa:2048'] : ['ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1']),
      '-nodes',
      '-days',
      '2',
      '-subj',
      `/CN=${names[0]}`,
      '-addext',
      `subjectAltName=${san}`,
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { stdio: 'ignore' },
  );
  return { cert, key };
}

/**
 * A `basic_auth` password verifier that counts its calls, holds each
 * verification until the test releases it, and then answers "wrong".
 */
export interface HeldVerifier {
  readonly verify: PasswordVerifier;
  /** Verifications started so far. */
  readonly calls: number;
  /** The most verifications held at once. */
  readonly peak: number;
  /** Ends the oldest held verification (as wrong); false when none is held. */
  releaseOne(): boolean;
}

/** A new {@link HeldVerifier}. */
export function heldVerifier(): HeldVerifier {
  let calls = 0;
  let running = 0;
  let peak = 0;
  const release: (() => void)[] = [];
  return {
    verify: () => {
      calls++;
      running++;
      peak = Math.max(peak, running);
      return new Promise((resolve) =>
        release.push(() => {
          running--;
          resolve(false);
        }),
      );
    },
    get calls() {
      return calls;
    },
    get peak() {
      return peak;
    },
    releaseOne() {
      const next = release.shift();
      next?.();
      return next !== undefined;
    },
  };
}

/** A raw response with its Date line blanked (the one thing that differs between two runs of a request). */
export const undated = (raw: string) => raw.replace(/\r\ndate: [^\r]*/gi, '\r\nDate: -');

/** What a request record says, without its clock readings. */
export const stableRecord = (r: RequestRecord) => ({ ...r, durationMs: 0, startedAt: 0 });
