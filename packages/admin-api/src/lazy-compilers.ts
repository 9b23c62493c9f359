import type { AjvCompiler } from '@fastify/ajv-compiler';
import type { SerializerSelector } from '@fastify/fast-json-stringify-compiler';

/**
 * Fastify's own schema compilers (ajv for what a request carries,
 * fast-json-stringify for what a route answers), loaded at the admin API's
 * first request and each route's function compiled the first time it runs,
 * instead of both when the app starts: an admin API nobody calls loads
 * neither ajv nor fast-json-stringify, and one that is called compiles only
 * the routes and statuses it answers. The same compilers with the same
 * options, so every validation error and every serialized body is what the
 * eager ones give; a schema error would surface at the route's first use
 * rather than at start (the schemas are fixed, and the tests run each
 * route). Loading and compiling them at start cost the admin app ~5 MB
 * (issue 32).
 *
 * What every first compile pays once (each compiler's instance, ajv's and
 * fast-json-stringify's code generators warming up: ~15 ms) is paid in the
 * background right after the load, one step per turn of the event loop, not
 * by the first write: in one process the admin API shares its thread with
 * the data plane, and a 50 ms compile in the first `POST /routes` was a
 * 50 ms stall of every site (issue 30).
 *
 * The compilers run synchronously, so the modules are imported before any
 * of them runs: `app.ts` awaits {@link loadSchemaCompilers} in its first
 * `onRequest` hook, which every request passes before validation and before
 * any answer of a route (a framework error, such as a bad URL, is answered
 * before the hooks but by Fastify's default serializer, not a route's).
 */

type ValidatorFactory = ReturnType<typeof AjvCompiler>;
type SerializerFactory = ReturnType<typeof SerializerSelector>;

/** A validation function as Fastify calls it: the result, and `errors` read after a `false`. */
interface Validate {
  (data: unknown): unknown;
  errors?: unknown;
}

let factories: { validators: ValidatorFactory; serializers: SerializerFactory } | null = null;
let loading: Promise<void> | null = null;
/** One step of warming per compiler factory Fastify asked for, run once the modules are there. */
const warmers: Array<() => void> = [];

/** A schema as small as a schema gets: compiling it warms a compiler's code generator. */
const WARM_SCHEMA = { type: 'object', properties: { warm: { type: 'string' } } };
const WARM_ROUTE = { schema: WARM_SCHEMA, method: 'GET', url: '/', httpPart: 'body', httpStatus: '200' };

let warming = false;

/** Runs the pending warmers, one per turn of the event loop (each is a few milliseconds of compiling). */
function warmInBackground(): void {
  if (warming || factories === null) return;
  const next = warmers.shift();
  if (next === undefined) return;
  warming = true;
  setImmediate(() => {
    warming = false;
    try {
      next();
    } catch {
      // A warm-up is an optimisation: the same compile runs again at the route's first use, and fails there.
    }
    warmInBackground();
  });
}

/** Queues `warm` for the background; runs at once in the background when the modules are already loaded. */
function warmLater(warm: () => void): void {
  warmers.push(warm);
  warmInBackground();
}

/** Imports Fastify's compilers once; resolves when they are there. */
export function loadSchemaCompilers(): Promise<void> {
  loading ??= Promise.all([import('@fastify/ajv-compiler'), import('@fastify/fast-json-stringify-compiler')]).then(
    // Each module's exports object is the factory: `default` of the namespace in Node and in the bundles
    // (esbuild gives a CommonJS module imported with import() no named exports).
    ([ajv, fjs]) => {
      factories = { validators: ajv.default(), serializers: fjs.default() };
      warmInBackground();
    },
  );
  return loading;
}

/** How many compiler warm-ups wait for the background (each runs in its own turn once the modules are loaded). */
export function pendingSchemaWarmups(): number {
  return warmers.length + (warming ? 1 : 0);
}

/** Whether {@link loadSchemaCompilers} has resolved. */
export function schemaCompilersLoaded(): boolean {
  return factories !== null;
}

function loaded(): NonNullable<typeof factories> {
  if (factories === null) throw new Error('admin API: a schema compiler ran before loadSchemaCompilers() resolved');
  return factories;
}

/** What Fastify's `schemaController.compilersFactory` takes: both compilers, each compiling on first use. */
export function lazyCompilers(): { buildValidator: ValidatorFactory; buildSerializer: SerializerFactory } {
  const buildValidator = ((externalSchemas: unknown, options: unknown) => {
    let compiler: ((route: unknown) => Validate) | null = null;
    const instance = () =>
      (compiler ??= (loaded().validators as (s: unknown, o: unknown) => (route: unknown) => Validate)(
        externalSchemas,
        options,
      ));
    warmLater(() => instance()(WARM_ROUTE));
    return (route: unknown) => {
      let validate: Validate | null = null;
      const lazy: Validate = (data) => {
        validate ??= instance()(route);
        const result = validate(data);
        lazy.errors = validate.errors;
        return result;
      };
      return lazy;
    };
  }) as unknown as ValidatorFactory;
  const buildSerializer: SerializerFactory = (externalSchemas, options) => {
    let compiler: ReturnType<SerializerFactory> | null = null;
    const instance = () => (compiler ??= loaded().serializers(externalSchemas, options));
    warmLater(() => instance()(WARM_ROUTE));
    return (route) => {
      let serialize: ((doc: unknown) => string) | null = null;
      return (doc) => {
        serialize ??= instance()(route);
        return serialize(doc);
      };
    };
  };
  return { buildValidator, buildSerializer };
}
