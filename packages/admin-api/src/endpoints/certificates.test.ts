import { readFile } from 'node:fs/promises';
import { Value } from 'typebox/value';
import { describe, expect, it } from 'vitest';
import {
  AUTH,
  expectAuthAndRateLimit,
  expectPortFailuresHidden,
  memoryCertificates,
  sampleCertificate,
  testApp,
} from '../memory-ports.test-helpers.js';
import type { CertificateInfo } from '../ports.js';
import { CertificateList } from '../schemas.js';

const get = { method: 'GET' as const, url: '/certificates', headers: AUTH };

describe('GET /certificates', () => {
  it('200 with every managed name, sorted by name, snake_case fields, times as RFC 3339 UTC', async () => {
    const rows: CertificateInfo[] = [
      sampleCertificate('shop.example'),
      sampleCertificate('app.localhost', {
        issuer: 'local',
        notAfter: Date.UTC(2026, 10, 23, 9, 30, 15, 250),
        nextAttemptAt: Date.UTC(2026, 10, 23, 5, 30, 15, 250),
      }),
      sampleCertificate('*.apps.example', {
        issuer: null,
        notAfter: null,
        status: 'renewing',
        nextAttemptAt: Date.UTC(2026, 10, 22, 21, 0, 0),
      }),
      sampleCertificate('down.example', {
        issuer: null,
        notAfter: null,
        status: 'failing',
        lastError: 'urn:ietf:params:acme:error:connection: Connection refused',
        nextAttemptAt: Date.UTC(2026, 10, 22, 21, 4, 0),
      }),
      sampleCertificate('10.0.0.7', { status: 'gave-up', lastError: 'rejectedIdentifier', nextAttemptAt: null }),
    ];
    const { app } = testApp({ certificates: memoryCertificates(rows) });
    const res = await app.inject(get);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['access-control-allow-origin']).toBe('null');
    expect(res.json()).toEqual([
      {
        name: '*.apps.example',
        issuer: null,
        not_after: null,
        status: 'renewing',
        last_error: null,
        next_attempt: '2026-11-22T21:00:00.000Z',
        challenge: null,
        dns_step: null,
      },
      {
        name: '10.0.0.7',
        issuer: 'https://acme.example/directory',
        not_after: '2027-02-20T21:00:00.000Z',
        status: 'gave-up',
        last_error: 'rejectedIdentifier',
        next_attempt: null,
        challenge: null,
        dns_step: null,
      },
      {
        name: 'app.localhost',
        issuer: 'local',
        not_after: '2026-11-23T09:30:15.250Z',
        status: 'valid',
        last_error: null,
        next_attempt: '2026-11-23T05:30:15.250Z',
        challenge: null,
        dns_step: null,
      },
      {
        name: 'down.example',
        issuer: null,
        not_after: null,
        status: 'failing',
        last_error: 'urn:ietf:params:acme:error:connection: Connection refused',
        next_attempt: '2026-11-22T21:04:00.000Z',
        challenge: null,
        dns_step: null,
      },
      {
        name: 'shop.example',
        issuer: 'https://acme.example/directory',
        not_after: '2027-02-20T21:00:00.000Z',
        status: 'valid',
        last_error: null,
        next_attempt: '2027-01-21T21:00:00.000Z',
        challenge: null,
        dns_step: null,
      },
    ]);
    expect(Value.Check(CertificateList, res.json())).toBe(true);
    await app.close();
  });

  it('times round-trip: each string parses back to the port’s epoch ms', async () => {
    const notAfter = 1_800_000_123_456;
    const nextAttemptAt = 1_799_000_000_001;
    const { app } = testApp({
      certificates: memoryCertificates([sampleCertificate('a.example', { notAfter, nextAttemptAt })]),
    });
    const [row] = (await app.inject(get)).json() as Array<{ not_after: string; next_attempt: string }>;
    expect(row?.not_after).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(Date.parse(row?.not_after ?? '')).toBe(notAfter);
    expect(Date.parse(row?.next_attempt ?? '')).toBe(nextAttemptAt);
    await app.close();
  });

  it('200 [] when no name is managed, and when automatic HTTPS is off (no port)', async () => {
    for (const certificates of [memoryCertificates([]), undefined]) {
      const { app } = testApp(certificates ? { certificates } : {});
      const res = await app.inject(get);
      expect(res.statusCode).toBe(200);
      expect(res.headers['access-control-allow-origin']).toBe('null');
      expect(res.json()).toEqual([]);
      await app.close();
    }
  });

  it('401 without or with a wrong token (the port is not asked), 429 over the limit', async () => {
    await expectAuthAndRateLimit('/certificates', (rateLimit) => {
      const port = memoryCertificates([sampleCertificate('a.example')]);
      return { app: testApp({ certificates: port, rateLimit }).app, port };
    });
  });

  it('405 with Allow: GET, HEAD for other methods', async () => {
    const { app } = testApp({ certificates: memoryCertificates([]) });
    for (const method of ['POST', 'PUT', 'DELETE', 'PURGE'] as const) {
      const res = await app.inject({ method, url: '/certificates', headers: AUTH });
      expect(res.statusCode, method).toBe(405);
      expect(res.headers.allow).toBe('GET, HEAD');
    }
    await app.close();
  });

  it('500 internal error when the port throws: the error is logged, its message never sent', async () => {
    await expectPortFailuresHidden(
      'EACCES: open /etc/proxy/certs/acme/account.key',
      400,
      (method, logger) => testApp({ certificates: { list: method }, logger }),
      get,
    );
  });

  it('500 serialize error for a row the schema refuses (unknown status, a time that is not a time)', async () => {
    const bad = [
      sampleCertificate('a.example', { status: 'expired' as CertificateInfo['status'] }),
      sampleCertificate('a.example', { notAfter: Number.NaN }),
      sampleCertificate('a.example', { nextAttemptAt: Number.POSITIVE_INFINITY }),
    ];
    for (const row of bad) {
      const { app } = testApp({ certificates: memoryCertificates([row]) });
      const res = await app.inject(get);
      expect(res.statusCode).toBe(500);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      expect((res.json() as { error: string }).error).toMatch(/^serialize error: .+/);
      await app.close();
    }
  });

  it('answers the README example for the rows it describes', async () => {
    const readme = await readFile(new URL('../../README.md', import.meta.url), 'utf8');
    const block = /<!-- certificates-example -->\s*```json\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block, 'the README example').toBeDefined();
    const rows: CertificateInfo[] = [
      {
        name: 'down.example',
        issuer: null,
        notAfter: null,
        status: 'failing',
        lastError: 'urn:ietf:params:acme:error:connection: Connection refused',
        nextAttemptAt: Date.UTC(2026, 10, 22, 21, 4),
        challenge: 'http-01',
      },
      {
        name: '*.shop.example',
        issuer: null,
        notAfter: null,
        status: 'failing',
        lastError:
          'rfc2136: 127.0.0.1:53 refused to add TXT _acme-challenge.shop.example in zone shop.example with TSIG key "proxyd" (hmac-sha256): NOTAUTH, TSIG error BADSIG (the server computed another signature: the secret or algorithm differs)',
        nextAttemptAt: Date.UTC(2026, 10, 22, 21, 5),
        challenge: 'dns-01',
        dnsStep: 'update-refused',
      },
      {
        name: 'shop.example',
        issuer: 'https://acme-v02.api.letsencrypt.org/directory',
        notAfter: Date.UTC(2027, 1, 20, 21),
        status: 'valid',
        lastError: null,
        nextAttemptAt: Date.UTC(2027, 0, 21, 21),
        challenge: 'tls-alpn-01',
        dnsStep: null,
      },
    ];
    const { app } = testApp({ certificates: memoryCertificates(rows) });
    expect((await app.inject(get)).json()).toEqual(JSON.parse(block ?? ''));
    await app.close();
  });
});
