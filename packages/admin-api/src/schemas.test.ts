import { AjvCompiler } from '@fastify/ajv-compiler';
import type { TSchema } from 'typebox';
import { describe, expect, it } from 'vitest';
import { ENDPOINTS } from './endpoints/index.js';

// The admin app compiles its schemas with ajv's `validateSchema` off (app.ts: the meta-schema's compile would cost
// the daemon's thread ~25 ms before its first validation). The check it skips runs here, for every schema Fastify
// compiles or OpenAPI documents: a schema ajv would refuse fails this test, not a request.

/** Every schema of an endpoint, with where it is used. */
function schemasOf(endpoint: (typeof ENDPOINTS)[number]): Array<[string, TSchema]> {
  const where = `${endpoint.method} ${endpoint.path}`;
  const out: Array<[string, TSchema]> = [];
  for (const [part, schema] of [
    ['params', endpoint.params],
    ['openApiParams', endpoint.openApiParams],
    ['body', endpoint.body],
    ['query', endpoint.query],
  ] as const) {
    if (schema !== undefined) out.push([`${where} ${part}`, schema]);
  }
  for (const [status, response] of Object.entries(endpoint.responses)) {
    if (response.schema !== undefined) out.push([`${where} ${status}`, response.schema]);
    for (const alt of response.alternatives ?? []) out.push([`${where} ${status} ${alt.contentType}`, alt.schema]);
  }
  return out;
}

describe('admin schemas against ajv meta-schema', () => {
  // The app's options, with the meta-schema check on; onCreate hands over the compiler's private ajv.
  let ajv: { validateSchema(schema: unknown): boolean; errors?: unknown } | undefined;
  AjvCompiler()({}, {
    customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false, validateSchema: true },
    onCreate: (instance: NonNullable<typeof ajv>) => {
      ajv = instance;
    },
  } as never);

  const all = ENDPOINTS.flatMap(schemasOf);

  it('covers every endpoint with a body or a response schema', () => {
    expect(all.length).toBeGreaterThan(ENDPOINTS.length);
  });

  it.each(all)('%s is a valid JSON Schema', (_where, schema) => {
    expect(ajv?.validateSchema(schema), JSON.stringify(ajv?.errors)).toBe(true);
  });

  it('refuses a schema ajv would refuse (the check can fail)', () => {
    expect(ajv?.validateSchema({ type: 'object', properties: { a: { type: 'strin' } } })).toBe(false);
  });
});
