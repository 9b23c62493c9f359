import { type StartedBind, startBind } from '@proxyd/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CertificatesErrorCode } from '../errors.js';
import { parseDnsServer } from './dns-client.js';
import { Dns01Solver, dnsStepOf } from './dns01-solver.js';
import { waitForTxt } from './propagation.js';
import { Rfc2136Provider } from './rfc2136.js';
import { challengeRecordName, findZone } from './zone.js';

/**
 * The DNS-01 pieces against a real BIND 9 (Debian's `named`) on a loopback
 * high port: RFC 2136 updates signed with TSIG, the zone found by SOA
 * lookup, CNAME delegation of `_acme-challenge`, and the authoritative
 * propagation check.
 */
let bind: StartedBind;
const value = (n: number) => `${'v'.repeat(42)}${n}`;

beforeAll(async () => {
  bind = await startBind({
    zones: [
      {
        name: 'example.com',
        records: ['www IN A 127.0.0.1', '_acme-challenge.alias IN CNAME alias.validation.example.net.'],
      },
      { name: 'validation.example.net' },
    ],
  });
});
afterAll(async () => {
  await bind?.stop();
});

function provider(secret = bind.key.secret, name = bind.key.name): Rfc2136Provider {
  return new Rfc2136Provider({
    server: parseDnsServer(bind.address),
    key: { name, algorithm: 'hmac-sha256', secret: Buffer.from(secret, 'base64') },
  });
}

describe('RFC 2136 with TSIG against BIND', () => {
  it('adds a TXT value beside another and deletes only its own', async () => {
    const record = (n: number) => ({
      zone: 'example.com',
      fqdn: '_acme-challenge.www.example.com',
      relativeName: '_acme-challenge.www',
      value: value(n),
      ttl: 60,
    });
    await provider().appendTxt(record(1));
    await provider().appendTxt(record(2));
    expect(bind.dig('_acme-challenge.www.example.com', 'TXT').split('\n').sort()).toEqual([
      `"${value(1)}"`,
      `"${value(2)}"`,
    ]);
    await provider().deleteTxt(record(1));
    expect(bind.dig('_acme-challenge.www.example.com', 'TXT')).toBe(`"${value(2)}"`);
    await provider().deleteTxt(record(2));
    expect(bind.dig('_acme-challenge.www.example.com', 'TXT')).toBe('');
  });

  it('reports a key the server does not know (BADKEY) and a wrong secret (BADSIG) as refused updates', async () => {
    const record = {
      zone: 'example.com',
      fqdn: '_acme-challenge.example.com',
      relativeName: '_acme-challenge',
      value: value(3),
      ttl: 60,
    };
    const wrongSecret = Buffer.alloc(32, 7).toString('base64');
    const badSig = provider(wrongSecret).appendTxt(record);
    await expect(badSig).rejects.toMatchObject({ code: CertificatesErrorCode.DNS_UPDATE_REFUSED });
    await expect(badSig).rejects.toThrow(
      /refused to add TXT _acme-challenge\.example\.com .*NOTAUTH, TSIG error BADSIG/,
    );
    await expect(badSig).rejects.not.toThrow(wrongSecret);
    await expect(provider(bind.key.secret, 'other-key').appendTxt(record)).rejects.toThrow(/TSIG error BADKEY/);
    expect(bind.dig('_acme-challenge.example.com', 'TXT')).toBe('');
  });
});

describe('zone finding and propagation against BIND', () => {
  const resolvers = () => [parseDnsServer(bind.address)];

  it('finds the zone by SOA from a name several labels below it', async () => {
    await expect(findZone('_acme-challenge.a.b.example.com', resolvers())).resolves.toBe('example.com');
    await expect(findZone('_acme-challenge.x.validation.example.net', resolvers())).resolves.toBe(
      'validation.example.net',
    );
    const missing = findZone('_acme-challenge.www.example.org', resolvers());
    await expect(missing).rejects.toMatchObject({ code: CertificatesErrorCode.DNS_ZONE_NOT_FOUND });
    // An authoritative-only server refuses names outside its zones.
    await expect(missing).rejects.toThrow(
      `no zone found for _acme-challenge.www.example.org: SOA _acme-challenge.www.example.org: ${bind.address} answered REFUSED`,
    );
  });

  it('follows the CNAME of _acme-challenge to another zone', async () => {
    await expect(challengeRecordName('alias.example.com', resolvers())).resolves.toBe('alias.validation.example.net');
    await expect(challengeRecordName('*.www.example.com', resolvers())).resolves.toBe(
      '_acme-challenge.www.example.com',
    );
  });

  it('waits for the authoritative servers, and names them when the record never shows', async () => {
    const fqdn = '_acme-challenge.late.example.com';
    const waiting = waitForTxt({
      fqdn,
      value: value(4),
      zone: 'example.com',
      resolvers: resolvers(),
      authoritativePort: bind.port,
      intervalMs: 50,
      timeoutMs: 10_000,
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const record = { zone: 'example.com', fqdn, relativeName: '_acme-challenge.late', value: value(4), ttl: 60 };
    await provider().appendTxt(record);
    await expect(waiting).resolves.toBeUndefined();
    await provider().deleteTxt(record);

    const never = waitForTxt({
      fqdn,
      value: value(5),
      zone: 'example.com',
      resolvers: resolvers(),
      authoritativePort: bind.port,
      intervalMs: 50,
      timeoutMs: 300,
    });
    await expect(never).rejects.toMatchObject({ code: CertificatesErrorCode.DNS_NOT_PROPAGATED });
    await expect(never).rejects.toThrow(`ns1.example.com (${bind.address}) answers NXDOMAIN without it`);
  });

  it('presents through the CNAME target and cleans up after itself', async () => {
    const solver = new Dns01Solver({
      provider: provider(),
      resolvers: [bind.address],
      authoritativePort: bind.port,
      propagationIntervalMs: 50,
    });
    const challenge = {
      type: 'dns-01',
      identifier: 'alias.example.com',
      wildcard: false,
      token: 't',
      keyAuthorization: value(6),
    } as const;
    await solver.present(challenge);
    expect(bind.dig('alias.validation.example.net', 'TXT')).toBe(`"${value(6)}"`);
    await solver.cleanUp(challenge);
    expect(bind.dig('alias.validation.example.net', 'TXT')).toBe('');
  });

  it('names the failed step: no zone, and a record the servers never answer', async () => {
    const accepting = { name: 'silent', appendTxt: async () => {}, deleteTxt: async () => {} };
    const challenge = (identifier: string) =>
      ({ type: 'dns-01', identifier, wildcard: false, token: 't', keyAuthorization: value(8) }) as const;
    const noZone = new Dns01Solver({ provider: accepting, resolvers: [bind.address] });
    expect(dnsStepOf(await noZone.present(challenge('www.example.org')).catch((e: unknown) => e))).toBe(
      'zone-not-found',
    );
    const silent = new Dns01Solver({
      provider: accepting,
      resolvers: [bind.address],
      authoritativePort: bind.port,
      propagationTimeoutMs: 300,
      propagationIntervalMs: 50,
    });
    expect(dnsStepOf(await silent.present(challenge('www.example.com')).catch((e: unknown) => e))).toBe(
      'not-propagated',
    );
    // A skipped check trusts the provider at once.
    const unchecked = new Dns01Solver({ provider: accepting, resolvers: [bind.address], propagationTimeoutMs: null });
    await expect(unchecked.present(challenge('www.example.com'))).resolves.toBeUndefined();
  });

  it('names the failed step: a refused update', async () => {
    const solver = new Dns01Solver({
      provider: provider(Buffer.alloc(32, 1).toString('base64')),
      resolvers: [bind.address],
      authoritativePort: bind.port,
    });
    const err = await solver
      .present({
        type: 'dns-01',
        identifier: 'www.example.com',
        wildcard: false,
        token: 't',
        keyAuthorization: value(7),
      })
      .catch((e: unknown) => e);
    expect(dnsStepOf(err)).toBe('update-refused');
  });
});
