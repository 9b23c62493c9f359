import { describe, expect, it } from 'vitest';
import { ProxyfileError, ProxyfileErrorCode, parse } from './index.js';

/** The global `storage` of a Proxyfile whose global block holds `body`. */
const storageOf = (body: string) => parse(`{\n${body}\n}\n`, { filename: 'Proxyfile' }).global.storage;

/** The error `parse` throws for the global block `body`: code, `line:column` and detail. */
function errorOf(body: string): { code: string; at: string; detail: string } {
  try {
    storageOf(body);
  } catch (err) {
    if (err instanceof ProxyfileError) {
      return { code: err.code, at: `${err.position.line}:${err.position.column}`, detail: err.detail };
    }
    throw err;
  }
  throw new Error(`accepted:\n${body}`);
}

const defaults = {
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

describe('storage global option', () => {
  it('is absent by default: the file storage in the cert dir', () => {
    expect(parse('a.test {\n\trespond\n}\n').global.storage).toBeUndefined();
  });

  it('reads a URL alone, with its port, database and user', () => {
    expect(storageOf('\tstorage redis redis://127.0.0.1:6379')).toEqual({ ...defaults, url: 'redis://127.0.0.1:6379' });
    expect(storageOf('\tstorage redis redis://proxy@cache.internal/3')).toEqual({
      ...defaults,
      url: 'redis://cache.internal',
      db: 3,
      username: 'proxy',
    });
  });

  it('reads every option of the block', () => {
    const body = [
      '\tstorage redis rediss://redis.internal:6380 {',
      '\t\tusername proxyd',
      '\t\tpassword_file /run/secrets/redis',
      '\t\ttls {',
      '\t\t\tca /etc/redis/ca.pem',
      '\t\t\tcert /etc/redis/client.pem',
      '\t\t\tkey /etc/redis/client.key',
      '\t\t\tserver_name redis.internal',
      '\t\t}',
      '\t\tkey_prefix fleet-a',
      '\t\tencryption_key_file /etc/proxy/storage.key',
      '\t\trate_limit_scope fleet',
      '\t}',
    ].join('\n');
    expect(storageOf(body)).toEqual({
      ...defaults,
      url: 'rediss://redis.internal:6380',
      username: 'proxyd',
      password_file: '/run/secrets/redis',
      tls: {
        ca: '/etc/redis/ca.pem',
        cert: '/etc/redis/client.pem',
        key: '/etc/redis/client.key',
        server_name: 'redis.internal',
      },
      key_prefix: 'fleet-a',
      encryption_key_file: '/etc/proxy/storage.key',
      rate_limit_scope: 'fleet',
    });
  });

  it('reads a Sentinel set; rediss:// alone turns TLS on with defaults', () => {
    const body = [
      '\tstorage redis {',
      '\t\tsentinels 10.0.0.1:26379 10.0.0.2:26379 [::1]:26379',
      '\t\tmaster_name mymaster',
      '\t\tpassword {env.REDIS_PASSWORD}',
      '\t\tsentinel_password {env.SENTINEL_PASSWORD}',
      '\t}',
    ].join('\n');
    expect(storageOf(body)).toEqual({
      ...defaults,
      sentinels: ['10.0.0.1:26379', '10.0.0.2:26379', '[::1]:26379'],
      master_name: 'mymaster',
      password: '{env.REDIS_PASSWORD}',
      sentinel_password: '{env.SENTINEL_PASSWORD}',
    });
    expect(storageOf('\tstorage redis rediss://r.internal')?.tls).toEqual({
      ca: null,
      cert: null,
      key: null,
      server_name: null,
    });
  });

  it.each([
    ['\tstorage', 'UNEXPECTED_END', '2:9', 'expected a storage backend: redis'],
    [
      '\tstorage file_system /var/lib/certs',
      'INVALID_VALUE',
      '2:10',
      'the file storage in the cert dir is the default',
    ],
    ['\tstorage rediss redis://a', 'INVALID_VALUE', '2:10', 'did you mean "redis"?'],
    ['\tstorage redis', 'UNEXPECTED_END', '2:10', 'needs a URL (storage redis redis://host:port) or "sentinels'],
    ['\tstorage redis http://a:6379', 'INVALID_VALUE', '2:16', 'expected a Redis URL'],
    ['\tstorage redis redis://:hunter2@a:6379', 'INVALID_VALUE', '2:16', 'never written in the Proxyfile'],
    ['\tstorage redis redis://a:6379/16', 'INVALID_VALUE', '2:16', 'a database number, 0 to 15'],
    ['\tstorage redis redis://a:6379?db=1', 'INVALID_VALUE', '2:16', 'no query or fragment'],
    ['\tstorage redis redis://%zz@a', 'INVALID_VALUE', '2:16', 'not valid percent-encoding'],
    ['\tstorage redis redis://a redis://b', 'UNEXPECTED_TOKEN', '2:26', 'expected the end of the line'],
    ['\tstorage redis redis://a {\n\t\tpassword hunter2\n\t}', 'INVALID_VALUE', '3:12', 'use {env.NAME}'],
    [
      '\tstorage redis redis://a {\n\t\tpassword {env.A}\n\t\tpassword_file /x\n\t}',
      'DUPLICATE_DIRECTIVE',
      '4:3',
      'password and password_file are one credential',
    ],
    ['\tstorage redis redis://a {\n\t\tkey_prefx p\n\t}', 'UNKNOWN_DIRECTIVE', '3:3', 'did you mean "key_prefix"?'],
    ['\tstorage redis redis://a {\n\t\tkey_prefix a:b\n\t}', 'INVALID_VALUE', '3:14', 'a key prefix: letters, digits'],
    ['\tstorage redis redis://a {\n\t\trate_limit_scope all\n\t}', 'INVALID_VALUE', '3:20', 'node (each node counts'],
    [
      '\tstorage redis redis://a {\n\t\tkey_prefix a\n\t\tkey_prefix b\n\t}',
      'DUPLICATE_DIRECTIVE',
      '4:3',
      'already set at Proxyfile:3:3',
    ],
    [
      '\tstorage redis redis://a {\n\t\tsentinels a:26379\n\t\tmaster_name m\n\t}',
      'INVALID_VALUE',
      '3:3',
      'a URL or sentinels, not both',
    ],
    ['\tstorage redis {\n\t\tsentinels a:26379\n\t}', 'UNEXPECTED_END', '3:3', 'sentinels needs "master_name <name>"'],
    [
      '\tstorage redis {\n\t\tsentinels a\n\t\tmaster_name m\n\t}',
      'INVALID_VALUE',
      '3:13',
      'expected a Sentinel address, host:port',
    ],
    [
      '\tstorage redis redis://a {\n\t\tmaster_name m\n\t}',
      'INVALID_VALUE',
      '3:3',
      'master_name applies only with sentinels',
    ],
    [
      '\tstorage redis redis://a {\n\t\tsentinel_password_file /x\n\t}',
      'INVALID_VALUE',
      '3:3',
      'applies only with sentinels',
    ],
    [
      '\tstorage redis redis://a {\n\t\ttls {\n\t\t\tca /ca.pem\n\t\t}\n\t}',
      'INVALID_VALUE',
      '3:3',
      'write rediss://a to connect over TLS',
    ],
    [
      '\tstorage redis rediss://a {\n\t\ttls {\n\t\t\tcert /c.pem\n\t\t}\n\t}',
      'UNEXPECTED_END',
      '3:3',
      'both "cert" and "key"',
    ],
    [
      '\tstorage redis rediss://a {\n\t\ttls {\n\t\t\tverify off\n\t\t}\n\t}',
      'UNKNOWN_DIRECTIVE',
      '4:4',
      'a storage tls option',
    ],
    [
      '\tstorage redis redis://a\n\tstorage redis redis://b',
      'DUPLICATE_DIRECTIVE',
      '3:2',
      'already set at Proxyfile:2:2',
    ],
  ])('refuses %j with a positioned %s', (body, code, at, detail) => {
    const err = errorOf(body);
    expect(err).toMatchObject({ code: ProxyfileErrorCode[code as keyof typeof ProxyfileErrorCode], at });
    expect(err.detail).toContain(detail);
  });
});
