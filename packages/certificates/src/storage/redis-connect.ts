import { readFile } from 'node:fs/promises';
import type { ConnectionOptions } from 'node:tls';
import type { RedisStorageConfig } from '@proxyd/model';
import { type RedisOptions as AllRedisOptions, Redis } from 'ioredis';
import { CertificatesError, CertificatesErrorCode } from '../errors.js';
import { RedisStorage, type RedisStorageOptions } from './redis-storage.js';
import { parseEncryptionKey } from './sealed-value.js';

/**
 * ioredis's options without `replyMapping`: its constructor narrows that
 * field's type, so a whole `RedisOptions` does not type-check under
 * `exactOptionalPropertyTypes`; proxyd does not set it.
 */
type RedisOptions = Omit<AllRedisOptions, 'replyMapping'>;

/** `{env.NAME}` → NAME. */
const ENV_PLACEHOLDER = /^\{env\.([A-Za-z_][A-Za-z0-9_]*)\}$/;

/** Options of {@link openRedisStorage}. */
export interface OpenRedisStorageOptions extends Omit<RedisStorageOptions, 'keyPrefix' | 'encryptionKey'> {
  /** Where `{env.NAME}` is read (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  /** How long a connection attempt may take, ms (default 5,000). */
  connectTimeoutMs?: number;
}

/**
 * The Redis storage the global `storage redis` option describes: secrets
 * (`{env.NAME}`, `*_file`, trimmed), TLS files and the encryption key are
 * read now, and an unset variable, an unreadable file or a key that is not
 * 256 bits is `CERT_STORAGE_CONFIG_INVALID` naming it (never a value).
 * The connection is made in the background: a Redis that does not answer
 * yet does not stop the daemon from starting; the storage's commands fail
 * with `CERT_STORAGE_IO` until it answers, and `state()` says so.
 */
export async function openRedisStorage(
  config: RedisStorageConfig,
  options: OpenRedisStorageOptions = {},
): Promise<RedisStorage> {
  const env = options.env ?? process.env;
  const password = await secret(config.password, config.password_file, 'password', env);
  const sentinelPassword = await secret(
    config.sentinel_password,
    config.sentinel_password_file,
    'sentinel_password',
    env,
  );
  const tls = config.tls === null ? undefined : await tlsOptions(config.tls);
  const encryptionKey =
    config.encryption_key_file === null
      ? null
      : parseEncryptionKey(
          config.encryption_key_file,
          await readConfigFile(config.encryption_key_file, 'encryption_key_file'),
        );
  const common: RedisOptions = {
    db: config.db,
    ...(config.username === null ? {} : { username: config.username }),
    ...(password === undefined ? {} : { password }),
    ...(tls === undefined ? {} : { tls }),
    connectTimeout: options.connectTimeoutMs ?? 5_000,
    // A command waits for at most two reconnection attempts, then fails (CERT_STORAGE_IO) instead of queueing forever.
    maxRetriesPerRequest: 2,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
    // A primary demoted by a failover answers READONLY until the client moves: reconnect and resend.
    reconnectOnError: (err) => (err.message.startsWith('READONLY') ? 2 : false),
  };
  let client: Redis;
  if (config.sentinels.length > 0) {
    const sentinelOptions: RedisOptions = {
      ...common,
      sentinels: config.sentinels.map(hostPort),
      name: config.master_name ?? '',
      role: 'master',
      ...(sentinelPassword === undefined ? {} : { sentinelPassword }),
      ...(tls === undefined ? {} : { enableTLSForSentinelMode: true, sentinelTLS: tls }),
      // Subscribes to Sentinel's +switch-master: the client moves to the new primary as soon as it is announced.
      failoverDetector: true,
      sentinelRetryStrategy: (attempt: number) => Math.min(attempt * 200, 2_000),
    };
    client = new Redis(sentinelOptions);
  } else {
    const url = new URL(config.url ?? 'redis://127.0.0.1:6379');
    const plainOptions: RedisOptions = {
      ...common,
      host: url.hostname.replace(/^\[|\]$/g, ''),
      port: url.port === '' ? 6379 : Number(url.port),
    };
    client = new Redis(plainOptions);
  }
  return new RedisStorage(client, {
    ...options,
    keyPrefix: config.key_prefix,
    encryptionKey,
  });
}

async function secret(
  value: string | null,
  file: string | null,
  name: string,
  env: NodeJS.ProcessEnv,
): Promise<string | undefined> {
  if (value !== null) {
    const variable = ENV_PLACEHOLDER.exec(value)?.[1] ?? value;
    const resolved = env[variable];
    if (resolved === undefined || resolved === '') {
      throw invalid(`storage redis ${name} ${value}: the environment variable ${variable} is not set`);
    }
    return resolved;
  }
  if (file === null) return undefined;
  const text = (await readConfigFile(file, `${name}_file`)).toString('utf8').trim();
  if (text === '') throw invalid(`storage redis ${name}_file ${file} is empty`);
  return text;
}

async function tlsOptions(tls: NonNullable<RedisStorageConfig['tls']>): Promise<ConnectionOptions> {
  const options: ConnectionOptions = {};
  if (tls.ca !== null) options.ca = await readConfigFile(tls.ca, 'tls ca');
  if (tls.cert !== null) options.cert = await readConfigFile(tls.cert, 'tls cert');
  if (tls.key !== null) options.key = await readConfigFile(tls.key, 'tls key');
  if (tls.server_name !== null) options.servername = tls.server_name;
  return options;
}

async function readConfigFile(file: string, what: string): Promise<Buffer> {
  try {
    return await readFile(file);
  } catch (err) {
    throw invalid(`storage redis ${what} ${file}: ${(err as Error).message}`, err);
  }
}

function hostPort(address: string): { host: string; port: number } {
  const colon = address.lastIndexOf(':');
  return { host: address.slice(0, colon).replace(/^\[|\]$/g, ''), port: Number(address.slice(colon + 1)) };
}

function invalid(message: string, cause?: unknown): CertificatesError {
  return new CertificatesError(
    CertificatesErrorCode.STORAGE_CONFIG_INVALID,
    message,
    cause === undefined ? undefined : { cause },
  );
}
