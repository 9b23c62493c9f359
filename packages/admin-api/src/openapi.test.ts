import { describe, expect, it } from 'vitest';
import { ENDPOINTS } from './endpoints/index.js';
import { AUTH, testApp } from './memory-ports.test-helpers.js';
import { openApiDocument } from './openapi.js';

type Node = Record<string, unknown>;

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

describe('OpenAPI document', () => {
  const doc = openApiDocument() as {
    openapi: string;
    paths: Record<string, Record<string, Node & { responses: Record<string, Node> }>>;
    components: { schemas: Record<string, Node> };
  };

  it('is OpenAPI 3.1 and JSON-clean (no TypeBox symbols, round-trips)', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(JSON.parse(JSON.stringify(doc))).toEqual(doc);
  });

  it('documents every endpoint of spec §4 with its operation', () => {
    const ops = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item).flatMap(([method, op]) =>
        method === 'x-additionalOperations'
          ? Object.keys(op).map((m) => `${m} ${path}`)
          : [`${method.toUpperCase()} ${path}`],
      ),
    );
    expect(ops.sort()).toEqual(
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
        'PURGE /cache/{host}/{path}',
        'POST /reload',
        'GET /openapi.json',
      ].sort(),
    );
    expect(ops).toHaveLength(ENDPOINTS.length);
  });

  it('puts a description on every field of every schema', () => {
    const all = properties(doc, '#');
    expect(all.length).toBeGreaterThan(40);
    const missing = all.filter(
      ([, schema]) => typeof schema.description !== 'string' || schema.description.length === 0,
    );
    expect(missing.map(([at]) => at)).toEqual([]);
  });

  it('documents the statuses of the spec for each endpoint', () => {
    const statuses = (path: string, method: string) => Object.keys(doc.paths[path]?.[method]?.responses ?? {}).sort();
    expect(statuses('/routes', 'post')).toEqual(['201', '400', '401', '413', '429']);
    expect(statuses('/routes/{domain}', 'delete')).toEqual(['200', '400', '401', '404', '414', '429']);
    expect(statuses('/routes/snapshot', 'put')).toEqual(['200', '400', '401', '413', '429']);
    expect(statuses('/reload', 'post')).toEqual(['200', '400', '401', '429', '501']);
    expect(statuses('/metrics', 'get')).toEqual(['200', '401', '404', '429']);
    expect(statuses('/health', 'get')).toEqual(['200']);
    expect(statuses('/certificates', 'get')).toEqual(['200', '401', '429', '500']);
    expect(statuses('/discovery', 'get')).toEqual(['200', '401', '429', '500']);
    const purge = (
      doc.paths['/cache/{host}/{path}']?.['x-additionalOperations'] as Record<string, { responses: Node }> | undefined
    )?.PURGE;
    expect(Object.keys(purge?.responses ?? {}).sort()).toEqual(['200', '400', '401', '404', '429', '501']);
    expect(doc.paths['/health']?.get?.security).toEqual([]);
    expect(doc.paths['/metrics']?.get?.responses['200']?.content).toHaveProperty(['text/plain; version=0.0.4']);
  });

  it('is served at GET /openapi.json behind auth', async () => {
    const { app } = testApp();
    expect((await app.inject({ method: 'GET', url: '/openapi.json' })).statusCode).toBe(401);
    const res = await app.inject({ method: 'GET', url: '/openapi.json', headers: AUTH });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual(JSON.parse(JSON.stringify(openApiDocument())));
    await app.close();
  });
});
