import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type StartedBind, startBind } from '@proxyd/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IssuedCertificate, ObtainOptions } from '../acme/acme-issuer.js';
import { MemoryStorage } from '../acme/memory-storage.test-helpers.js';
import { CertificatesError, CertificatesErrorCode } from '../errors.js';
import { CertificateManager, type ManagedAcmeIssuer } from '../manager/certificate-manager.js';
import { MemoryLogger } from '../manager/manager.test-helpers.js';
import { Dns01Solver, dnsStepOf } from './dns01-solver.js';
import { CloudflareProvider } from './http/cloudflare.js';
import { type FakeApi, startFakeApi } from './http/fake-api.test-helpers.js';
import { createDns01Solver, createDnsProvider, resolveSecret } from './provider-config.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'proxyd-dns-secrets-'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('credentials: {env.NAME} and *_file', () => {
  const cf = (options: Record<string, string>) => ({ name: 'cloudflare', options });

  it('reads a variable or a file (trimmed), and names the variable or file when it cannot, never a value', () => {
    expect(resolveSecret(cf({ api_token: '{env.CF_TOKEN}' }), 'api_token', { env: { CF_TOKEN: ' t0k3n \n' } })).toBe(
      't0k3n',
    );
    const file = path.join(dir, 'token');
    writeFileSync(file, 'from-file\n');
    expect(resolveSecret(cf({ api_token_file: file }), 'api_token', { env: {} })).toBe('from-file');
    expect(() => resolveSecret(cf({ api_token: '{env.CF_TOKEN}' }), 'api_token', { env: {} })).toThrow(
      'api_token of dns cloudflare: environment variable CF_TOKEN is not set or empty',
    );
    const missing = path.join(dir, 'absent');
    expect(() => resolveSecret(cf({ api_token_file: missing }), 'api_token', { env: {} })).toThrow(
      `api_token_file of dns cloudflare: cannot read ${missing}: ENOENT`,
    );
  });

  it('builds each provider, and refuses an unknown one or missing options', () => {
    const env = { T: 'x', K: Buffer.alloc(32).toString('base64') };
    for (const [name, option] of [
      ['cloudflare', 'api_token'],
      ['hetzner', 'api_token'],
      ['digitalocean', 'auth_token'],
      ['desec', 'token'],
    ] as const) {
      expect(createDnsProvider({ name, options: { [option]: '{env.T}' } }, { env }).name).toBe(name);
      expect(() => createDnsProvider({ name, options: {} }, { env })).toThrow(
        `dns ${name} needs ${option} or ${option}_file`,
      );
    }
    expect(
      createDnsProvider(
        { name: 'rfc2136', options: { server: '127.0.0.1:5353', key_name: 'k', key: '{env.K}' } },
        { env },
      ).name,
    ).toBe('rfc2136');
    expect(createDnsProvider({ name: 'exec', options: { command: '/bin/true' } }).name).toBe('exec');
    expect(() => createDnsProvider({ name: 'route53', options: {} })).toThrow('unknown DNS provider "route53"');
  });

  it('a provider that cannot be built makes its names fail with provider-invalid, told once', async () => {
    const heard: CertificatesError[] = [];
    const solver = createDns01Solver(
      {
        provider: { name: 'hetzner', options: { api_token: '{env.HETZNER_UNSET}' } },
        propagation_timeout_ms: null,
        resolvers: ['127.0.0.1:1'],
        authoritative_port: null,
      },
      { env: {} },
      (error) => heard.push(error),
    );
    expect(heard.map((e) => e.code)).toEqual([CertificatesErrorCode.DNS_PROVIDER_INVALID]);
    expect(solver.provider.name).toBe('hetzner');
    const err = await solver.provider
      .appendTxt({ zone: 'example.com', fqdn: 'example.com', relativeName: '@', value: 'v', ttl: 60 })
      .catch((e: unknown) => e);
    expect(dnsStepOf(err)).toBe('provider-invalid');
  });
});

describe('a failing provider never puts its secret in the log', () => {
  let bind: StartedBind;
  let api: FakeApi;
  const SECRET = 'cf-secret-value-do-not-log-7f3a9c';

  beforeAll(async () => {
    bind = await startBind({ zones: [{ name: 'example.com' }] });
    // Cloudflare's answer to a token it does not accept (see http/cloudflare.test.ts).
    api = await startFakeApi('/client/v4', () => ({
      status: 403,
      json: { success: false, errors: [{ code: 10000, message: 'Authentication error' }], messages: [], result: null },
    }));
  });
  afterAll(async () => {
    await api?.close();
    await bind?.stop();
  });

  it('the manager logs the refusal with the provider, step and reason, and the token appears nowhere', async () => {
    // The token comes from the environment as the Proxyfile's {env.CF_API_TOKEN} says; the provider is
    // pointed at the local API (a constructor option the Proxyfile does not offer).
    const settings = { name: 'cloudflare', options: { api_token: '{env.CF_API_TOKEN}' } };
    const apiToken = resolveSecret(settings, 'api_token', { env: { CF_API_TOKEN: SECRET } }) ?? '';
    const solver = new Dns01Solver({
      provider: new CloudflareProvider({ apiToken, baseUrl: api.baseUrl }),
      resolvers: [bind.address],
      propagationTimeoutMs: null,
    });
    // Stands in for the CA only: asks the name's solver to present a DNS-01 challenge, as AcmeIssuer does.
    const issuer: ManagedAcmeIssuer = {
      accountFolder: 'acme/test-ca/default',
      async obtain(names: readonly string[], options?: ObtainOptions): Promise<IssuedCertificate> {
        const challenge = {
          type: 'dns-01',
          identifier: names[0] ?? '',
          wildcard: false,
          token: 't',
          keyAuthorization: 'k'.repeat(43),
        } as const;
        try {
          await options?.dnsSolver?.present(challenge);
        } catch (err) {
          throw new CertificatesError(
            CertificatesErrorCode.ACME_CHALLENGE_SETUP_FAILED,
            `could not present the dns-01 challenge for ${names[0]}: ${(err as Error).message}`,
            { cause: err },
          );
        }
        throw new Error('unreachable: the provider refuses');
      },
    };
    const logger = new MemoryLogger();
    const manager = new CertificateManager({ storage: new MemoryStorage(), acmeIssuers: [issuer], logger });
    await manager.setNames([{ name: 'www.example.com', issuer: 'acme', dns: solver }]);
    await manager.whenIdle();
    manager.close();
    expect(api.requests[0]?.headers.authorization).toBe(`Bearer ${SECRET}`);
    const failure = logger.lines.find((line) =>
      line.msg.startsWith('obtaining certificate for www.example.com failed'),
    );
    expect(failure?.msg).toContain(
      'cloudflare: looking up zone example.com: HTTP 403: Authentication error (code 10000)',
    );
    expect(failure?.obj).toMatchObject({ challenge: 'dns-01', dnsStep: 'update-refused' });
    expect(JSON.stringify(logger.lines)).not.toContain(SECRET);
    expect(JSON.stringify(manager.status())).not.toContain(SECRET);
  });
});
