import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ENDPOINTS } from './endpoints/index.js';
import { AUTH, MemoryCache, ScriptedReload, TOKEN, testApp } from './memory-ports.test-helpers.js';
import { DEFAULT_SERVER, openApiDocument } from './openapi.js';

import { type Document, type Node, type Operation, operationsOf } from './openapi.test-helpers.js';

/** Every property schema of every object schema in the document, with where it is. */
function properties(node: unknown, at: string, out: Array<[string, Node]> = []): Array<[string, Node]> {
  if (Array.isArray(node)) {
    for (const [i, n] of node.entries()) properties(n, `${at}[${i}]`, out);
  } else if (node !== null && typeof node === 'object') {
    const props = (node as Node).properties;
    if (props !== null && typeof props === 'object') {
      for (const [name, schema] of Object.entries(props as Node)) out.push([`${at}.${name}`, schema as Node]);
    }
    for (const [key, value] of Object.entries(node)) properties(value, `${at}.${key}`, out);
  }
  return out;
}

/** A response with its `$ref` (to `components.responses`) resolved. */
function resolved(doc: Document, response: Node): Node {
  const target = response.$ref;
  if (typeof target !== 'string') return response;
  const name = target.replace('#/components/responses/', '');
  const found = doc.components.responses[name];
  if (found === undefined) throw new Error(`dangling ${target}`);
  return found;
}

describe('OpenAPI document', () => {
  const doc = openApiDocument() as unknown as Document;
  const ops = operationsOf(doc);
  const op = (method: string, path: string) => ops.find((o) => o.method === method && o.path === path)?.op;
  const statuses = (method: string, path: string) => Object.keys(op(method, path)?.responses ?? {}).sort();

  it('is OpenAPI 3.1 and JSON-clean (no TypeBox symbols, round-trips)', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(JSON.parse(JSON.stringify(doc))).toEqual(doc);
  });

  it('documents every endpoint of spec §4, the DELETE alias of PURGE, and OPTIONS on every path', () => {
    const named = ops.filter((o) => o.method !== 'OPTIONS').map((o) => `${o.method} ${o.path}`);
    expect(named.sort()).toEqual(
      [
        'GET /health',
        'GET /routes',
        'POST /routes',
        'DELETE /routes/{domain}',
        'PUT /routes/snapshot',
        'GET /metrics',
        'GET /analytics',
        'GET /analytics/{domain}',
        'GET /certificates',
        'GET /discovery',
        'GET /stats',
        'GET /stats/{domain}/timeseries',
        'GET /stats/{domain}/totals',
        'GET /stats/{domain}/breakdown/{dimension}',
        'GET /stats/{domain}/vitals',
        'PURGE /cache/{host}/{path}',
        'DELETE /cache/{host}/{path}',
        'POST /reload',
        'GET /openapi.json',
      ].sort(),
    );
    expect(named).toHaveLength(ENDPOINTS.length);
    expect(ops.filter((o) => o.method === 'OPTIONS').map((o) => o.path)).toEqual(Object.keys(doc.paths));
    const ids = ops.map((o) => o.op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('puts a description on every field of every schema', () => {
    const all = properties(doc, '#');
    expect(all.length).toBeGreaterThan(40);
    const missing = all.filter(
      ([, schema]) => typeof schema.description !== 'string' || schema.description.length === 0,
    );
    expect(missing.map(([at]) => at)).toEqual([]);
  });

  it('documents the statuses of the spec for each endpoint, and those the code adds', () => {
    const listener = ['408', '417', '431'];
    const withListener = (...s: string[]) => [...s, ...listener].sort();
    expect(statuses('POST', '/routes')).toEqual(withListener('201', '400', '401', '409', '413', '429', '500', '503'));
    expect(statuses('DELETE', '/routes/{domain}')).toEqual(
      withListener('200', '400', '401', '404', '413', '414', '429', '500', '503'),
    );
    expect(statuses('PUT', '/routes/snapshot')).toEqual(
      withListener('200', '400', '401', '409', '413', '429', '500', '503'),
    );
    expect(statuses('POST', '/reload')).toEqual(withListener('200', '400', '401', '413', '429', '500', '501'));
    expect(statuses('GET', '/metrics')).toEqual(withListener('200', '401', '404', '429', '500'));
    expect(statuses('GET', '/health')).toEqual(withListener('200'));
    expect(statuses('GET', '/certificates')).toEqual(withListener('200', '401', '429', '500'));
    expect(statuses('GET', '/discovery')).toEqual(withListener('200', '401', '429', '500'));
    expect(statuses('PURGE', '/cache/{host}/{path}')).toEqual(
      withListener('200', '400', '401', '404', '429', '500', '501'),
    );
    // The alias is the PURGE plus what reading a DELETE body adds (413).
    expect(statuses('DELETE', '/cache/{host}/{path}')).toEqual(
      withListener('200', '400', '401', '404', '413', '429', '500', '501'),
    );
    expect(op('DELETE', '/cache/{host}/{path}')?.responses['404']).toEqual(
      op('PURGE', '/cache/{host}/{path}')?.responses['404'],
    );
    expect(op('GET', '/health')?.security).toEqual([]);
    expect(op('GET', '/metrics')?.responses['200']?.content).toHaveProperty(['text/plain; version=0.0.4']);
    // Reload's 400 is the parse error as text, or the envelope for an invalid Content-Type header.
    expect(Object.keys(op('POST', '/reload')?.responses['400']?.content as Node).sort()).toEqual([
      'application/json',
      'text/plain; charset=utf-8',
    ]);
  });

  it('declares Access-Control-Allow-Origin: null on every response of every operation', () => {
    expect(doc.components.headers.AccessControlAllowOrigin).toMatchObject({
      schema: { type: 'string', const: 'null' },
    });
    const missing = ops.flatMap(({ method, path, op }) =>
      Object.entries(op.responses)
        .filter(
          ([, r]) => (resolved(doc, r).headers as Node | undefined)?.['Access-Control-Allow-Origin'] === undefined,
        )
        .map(([status]) => `${method} ${path} ${status}`),
    );
    expect(missing).toEqual([]);
    const corsOf = (r: Node) => (resolved(doc, r).headers as Node)['Access-Control-Allow-Origin'];
    for (const { op } of ops) {
      for (const r of Object.values(op.responses)) {
        expect(corsOf(r)).toEqual({ $ref: '#/components/headers/AccessControlAllowOrigin' });
      }
    }
  });

  it('declares 405 with the exact Allow of each path, as the app answers OPTIONS and a wrong method', async () => {
    const { app } = testApp({ cache: new MemoryCache([]), reload: new ScriptedReload([]) });
    for (const [path, item] of Object.entries(doc.paths)) {
      const options = item.options as Operation;
      const url = path.replace(/\{[^}]+\}/g, 'x');
      const allow = ((options.responses['405'] as Node).headers as { Allow: { schema: { const: string } } }).Allow
        .schema.const;
      const preflight = await app.inject({ method: 'OPTIONS', url });
      expect([preflight.statusCode, preflight.headers.allow], url).toEqual([405, allow]);
      expect(options.security).toEqual([]);
      expect(options.tags).toEqual(ops.find((o) => o.path === path && o.method !== 'OPTIONS')?.op.tags);
      // The methods of every path item whose template matches (DELETE /routes/snapshot deletes the route "snapshot").
      const declared = Object.entries(doc.paths)
        .filter(([p]) => new RegExp(`^${p.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(url))
        .flatMap(([, i]) => Object.keys(i).filter((k) => k !== 'options'))
        .flatMap((k) => (k === 'x-additionalOperations' ? ['PURGE'] : [k.toUpperCase()]));
      const expected = [...new Set(declared.flatMap((m) => (m === 'GET' ? ['GET', 'HEAD'] : [m])))].sort();
      expect(allow.split(', '), path).toEqual(expected);
      const wrong = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'PURGE'].find((m) => !expected.includes(m)) as string;
      const res = await app.inject({ method: wrong as 'GET', url, headers: AUTH });
      expect([res.statusCode, res.headers.allow], `${wrong} ${url}`).toEqual([405, allow]);
    }
    await app.close();
  });

  it('names the Apache-2.0 license (the LICENSE file) and tags every operation with a declared tag, every tag used', () => {
    expect(doc.info.license).toEqual({ name: 'Apache-2.0', identifier: 'Apache-2.0' });
    const declared = doc.tags.map((t) => t.name);
    expect(declared).toEqual(
      expect.arrayContaining(['routes', 'analytics', 'cache', 'config', 'certificates', 'health', 'metrics']),
    );
    for (const t of doc.tags) expect(t.description.length).toBeGreaterThan(0);
    for (const { method, path, op } of ops) {
      expect(op.tags, `${method} ${path}`).toHaveLength(1);
      expect(declared, `${method} ${path}`).toContain(op.tags[0]);
    }
    expect(new Set(ops.map((o) => o.op.tags[0]))).toEqual(new Set(declared));
    expect(op('PURGE', '/cache/{host}/{path}')?.tags).toEqual(['cache']);
    expect(op('POST', '/reload')?.tags).toEqual(['config']);
  });

  it('names the default TCP listener when printed (proxyd openapi), or the servers it is given', () => {
    expect(doc.servers).toEqual([DEFAULT_SERVER]);
    expect(DEFAULT_SERVER.url).toBe('http://127.0.0.1:6190');
    const given = [{ url: 'http://10.1.2.3:7000', description: 'x' }];
    expect((openApiDocument({ servers: given }) as unknown as Document).servers).toEqual(given);
  });
});

describe('GET /openapi.json', () => {
  it('is served behind auth, the document with servers taken from the Host header', async () => {
    const { app } = testApp();
    expect((await app.inject({ method: 'GET', url: '/openapi.json' })).statusCode).toBe(401);
    const res = await app.inject({
      method: 'GET',
      url: '/openapi.json',
      headers: { ...AUTH, host: 'admin.internal:7443' },
    });
    expect(res.statusCode).toBe(200);
    const servers = [{ url: 'http://admin.internal:7443', description: expect.any(String) }];
    expect(res.json()).toEqual({ ...JSON.parse(JSON.stringify(openApiDocument())), servers });
    const v6 = await app.inject({ method: 'GET', url: '/openapi.json', headers: { ...AUTH, host: '[::1]:6190' } });
    expect(v6.json().servers[0].url).toBe('http://[::1]:6190');
    await app.close();
  });

  it('over real listeners: the TCP address the client used, and http://localhost naming the Unix socket', async () => {
    const { app } = testApp({ transport: 'auto' });
    const dir = await mkdtemp(join(tmpdir(), 'admin-openapi-'));
    const socketPath = join(dir, 'admin.sock');
    await app.listen({ host: '127.0.0.1', port: 0 });
    await app.ready();
    const unix = createServer(app.routing);
    await new Promise<void>((resolve) => unix.listen(socketPath, resolve));
    const fetchDoc = (target: { socketPath: string } | { port: number }, headers: Record<string, string>) =>
      new Promise<{ servers: Array<{ url: string; description: string }> }>((resolve, reject) => {
        const req = httpRequest({ ...target, path: '/openapi.json', headers, setHost: false }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c) => (body += c));
          res.on('end', () => resolve(JSON.parse(body)));
        });
        req.on('error', reject);
        req.end();
      });
    try {
      const port = (app.server.address() as { port: number }).port;
      const auth = { authorization: `Bearer ${TOKEN}` };
      expect((await fetchDoc({ port }, { ...auth, host: `127.0.0.1:${port}` })).servers).toEqual([
        { url: `http://127.0.0.1:${port}`, description: 'The TCP admin listener this document was fetched from' },
      ]);
      // No usable Host header (HTTP/1.1 requires one; this one is a URL): the address the connection reached.
      expect((await fetchDoc({ port }, { ...auth, host: 'http://evil.example/' })).servers[0]?.url).toBe(
        `http://127.0.0.1:${port}`,
      );
      const overSocket = await fetchDoc({ socketPath }, { host: 'localhost' });
      expect(overSocket.servers).toEqual([
        { url: 'http://localhost', description: expect.stringContaining(socketPath) },
      ]);
    } finally {
      await new Promise((resolve) => unix.close(resolve));
      await app.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
