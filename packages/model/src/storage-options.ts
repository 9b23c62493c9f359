/** The global `storage` option: where certificates, keys and ACME state live. */
import { type Static, Type } from 'typebox';

/** A secret's source: `{env.NAME}` (resolved when the daemon starts) or null (then `*_file`, or none). */
const EnvSecret = Type.Union([Type.String({ pattern: '^\\{env\\.[A-Za-z_][A-Za-z0-9_]*\\}$' }), Type.Null()]);
const OptionalPath = Type.Union([Type.String({ minLength: 1 }), Type.Null()]);

/** `tls { ca … cert … key … server_name … }` of `storage redis`: TLS to Redis (and to Sentinel). */
export const RedisTlsOptions = Type.Object(
  {
    ca: Type.Union([Type.String({ minLength: 1 }), Type.Null()], {
      description: "PEM file of the roots Redis's certificate is checked against (default null: Node's bundled roots)",
    }),
    cert: OptionalPath,
    key: OptionalPath,
    server_name: Type.Union([Type.String({ minLength: 1 }), Type.Null()], {
      description: 'The name checked in the certificate and sent as SNI (default null: the host connected to)',
    }),
  },
  { additionalProperties: false, description: 'TLS to Redis; cert and key: a client certificate, both or neither' },
);
export type RedisTlsOptions = Static<typeof RedisTlsOptions>;

/**
 * `storage redis <url> { … }` or `storage redis { sentinels …; master_name … }`:
 * certificates, keys, ACME accounts and their locks in Redis, shared by the
 * nodes of a fleet. Absent: the file storage in the cert dir.
 */
export const RedisStorageConfig = Type.Object(
  {
    backend: Type.Literal('redis'),
    url: Type.Union([Type.String({ pattern: '^rediss?://' }), Type.Null()], {
      description: 'redis://host:port[/db] or rediss:// (TLS); null with sentinels',
    }),
    sentinels: Type.Array(Type.String({ minLength: 1 }), {
      description: 'Sentinel addresses host:port (empty with a url)',
    }),
    master_name: Type.Union([Type.String({ minLength: 1 }), Type.Null()], {
      description: 'The primary Sentinel watches, by name (required with sentinels)',
    }),
    db: Type.Integer({ minimum: 0, maximum: 15, description: 'Database number (default 0; the url path)' }),
    username: Type.Union([Type.String({ minLength: 1 }), Type.Null()], { description: 'ACL user (default null)' }),
    password: EnvSecret,
    password_file: OptionalPath,
    sentinel_password: EnvSecret,
    sentinel_password_file: OptionalPath,
    tls: Type.Union([RedisTlsOptions, Type.Null()], {
      description: 'TLS options (default null: TLS only with rediss://, with default settings)',
    }),
    key_prefix: Type.String({
      pattern: '^[A-Za-z0-9_.-]+$',
      description: 'Every key starts with <key_prefix>: (default proxyd)',
    }),
    encryption_key_file: Type.Union([Type.String({ minLength: 1 }), Type.Null()], {
      description: 'A file holding a 256-bit key: values stored AES-256-GCM sealed (default null: stored as they are)',
    }),
    rate_limit_scope: Type.Union([Type.Literal('node'), Type.Literal('fleet')], {
      description:
        "Where rate_limit counts: node (default: each node its own clients' requests) or fleet (every node's, added up in Redis)",
    }),
  },
  { additionalProperties: false },
);
export type RedisStorageConfig = Static<typeof RedisStorageConfig>;

/** A `storage redis` block with nothing set: every field at its default (the Proxyfile parser starts from it). */
export function redisStorageDefaults(): RedisStorageConfig {
  return {
    backend: 'redis',
    url: null,
    sentinels: [],
    master_name: null,
    db: 0,
    username: null,
    password: null,
    password_file: null,
    sentinel_password: null,
    sentinel_password_file: null,
    tls: null,
    key_prefix: 'proxyd',
    encryption_key_file: null,
    rate_limit_scope: 'node',
  };
}
