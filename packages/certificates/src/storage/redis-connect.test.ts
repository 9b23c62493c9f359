import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type RedisStorageConfig, redisStorageDefaults } from '@proxyd/model';
import { freePort, type StartedRedis, startRedis } from '@proxyd/test-peers';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CertificatesErrorCode } from '../errors.js';
import { openRedisStorage } from './redis-connect.js';
import type { RedisStorage } from './redis-storage.js';

let dir: string;
const peers: StartedRedis[] = [];
const opened: RedisStorage[] = [];
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'proxyd-redis-connect-'));
});
afterAll(async () => {
  await Promise.all(opened.map((storage) => storage.close()));
  await Promise.all(peers.map((peer) => peer.stop()));
  await rm(dir, { recursive: true, force: true });
});

const base = (url: string): RedisStorageConfig => ({ ...redisStorageDefaults(), url });

async function open(config: RedisStorageConfig, env: NodeJS.ProcessEnv = {}): Promise<RedisStorage> {
  const storage = await openRedisStorage(config, { env, connectTimeoutMs: 2_000 });
  opened.push(storage);
  return storage;
}

describe('openRedisStorage: credentials', () => {
  it('authenticates as an ACL user with the password from {env.NAME} or a file; a wrong one fails clearly', async () => {
    const redis = await startRedis({ args: ['--user', 'proxyd', 'on', '>s3cret', '~*', '&*', '+@all'] });
    peers.push(redis);
    await writeFile(path.join(dir, 'password'), 's3cret\n');
    const config = { ...base(redis.url), username: 'proxyd' };
    const fromEnv = await open({ ...config, password: '{env.REDIS_PASSWORD}' }, { REDIS_PASSWORD: 's3cret' });
    await fromEnv.store('a', 'env');
    const fromFile = await open({ ...config, password_file: path.join(dir, 'password') });
    expect((await fromFile.load('a'))?.toString()).toBe('env');
    const wrong = await open({ ...config, password: '{env.REDIS_PASSWORD}' }, { REDIS_PASSWORD: 'nope' });
    await expect(wrong.load('a')).rejects.toMatchObject({
      code: CertificatesErrorCode.STORAGE_IO,
      message: expect.stringMatching(/WRONGPASS/),
    });
    await expect(open({ ...config, password_file: path.join(dir, 'missing') })).rejects.toMatchObject({
      code: CertificatesErrorCode.STORAGE_CONFIG_INVALID,
      message: expect.stringContaining(`storage redis password_file ${path.join(dir, 'missing')}: ENOENT`),
    });
  });
});

/** A CA and a server certificate for 127.0.0.1, made with openssl in `dir`; returns the file paths. */
function makeCertificates(prefix: string): { ca: string; cert: string; key: string } {
  const file = (name: string) => path.join(dir, `${prefix}-${name}`);
  const run = (...args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' });
  run(
    ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1'],
    ...['-subj', `/CN=${prefix} test CA`, '-keyout', file('ca.key'), '-out', file('ca.pem')],
  );
  run(
    ...['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', '/CN=redis'],
    ...['-keyout', file('server.key'), '-out', file('server.csr')],
  );
  writeFileSync(file('ext'), 'subjectAltName=IP:127.0.0.1\n');
  run(
    ...['x509', '-req', '-in', file('server.csr'), '-CA', file('ca.pem'), '-CAkey', file('ca.key')],
    ...['-CAcreateserial', '-days', '1', '-extfile', file('ext'), '-out', file('server.pem')],
  );
  return { ca: file('ca.pem'), cert: file('server.pem'), key: file('server.key') };
}

describe('openRedisStorage: TLS', () => {
  it('speaks TLS to rediss:// checking the certificate against tls { ca }; another CA is refused', async () => {
    const server = makeCertificates('server');
    const other = makeCertificates('other');
    const tlsPort = await freePort();
    const redis = await startRedis({
      args: [
        ...['--tls-port', String(tlsPort), '--tls-cert-file', server.cert, '--tls-key-file', server.key],
        ...['--tls-ca-cert-file', server.ca, '--tls-auth-clients', 'no'],
      ],
    });
    peers.push(redis);
    const url = `rediss://127.0.0.1:${tlsPort}`;
    const tls = { ca: server.ca, cert: null, key: null, server_name: null };
    const storage = await open({ ...base(url), tls });
    await storage.store('a', 'over tls');
    expect(redis.cli('GET', 'proxyd:value:a')).toBe('over tls');
    const untrusting = await open({ ...base(url), tls: { ...tls, ca: other.ca } });
    await expect(untrusting.load('a')).rejects.toMatchObject({ code: CertificatesErrorCode.STORAGE_IO });
    await vi.waitFor(() => expect(untrusting.state().error).toMatch(/certificate/i));
    expect(untrusting.state().reachable).toBe(false);
  });
});
