import { crypto as acmeCrypto } from 'acme-client';
import { describe, expect, it } from 'vitest';
import { ChallengePreference } from './challenge-preference.js';
import { ChallengeTable } from './challenge-table.js';

const http01 = { type: 'http-01', identifier: 'A.Example.com', token: 'tok', keyAuthorization: 'tok.thumb' } as const;

describe('ChallengeTable', () => {
  it('answers an HTTP-01 token only on its own host, until cleaned up', () => {
    const table = new ChallengeTable();
    expect(table.respond('tok', 'a.example.com')).toBeNull();
    table.present(http01);
    expect(table.size).toBe(1);
    expect(table.respond('tok', 'a.example.com')).toBe('tok.thumb');
    expect(table.respond('tok', 'A.EXAMPLE.COM')).toBe('tok.thumb');
    expect(table.respond('tok', 'b.example.com')).toBeNull();
    expect(table.respond('other', 'a.example.com')).toBeNull();
    table.cleanUp(http01);
    expect(table.respond('tok', 'a.example.com')).toBeNull();
    expect(table.size).toBe(0);
  });

  it('serves the TLS-ALPN-01 certificate for its server name while presented', async () => {
    const table = new ChallengeTable();
    const authz = { identifier: { type: 'dns', value: 'a.example.com' } };
    const [key, cert] = await acmeCrypto.createAlpnCertificate(
      authz as never,
      'tok.thumb',
      await acmeCrypto.createPrivateEcdsaKey('P-256'),
    );
    const challenge = {
      type: 'tls-alpn-01',
      identifier: 'a.example.com',
      token: 'tok',
      keyAuthorization: 'tok.thumb',
      certificatePem: cert.toString(),
      privateKeyPem: key.toString(),
    } as const;
    expect(table.alpnContextFor('a.example.com')).toBeNull();
    table.present(challenge);
    expect(table.alpnContextFor('A.example.com')).not.toBeNull();
    expect(table.alpnContextFor('b.example.com')).toBeNull();
    expect(table.respond('tok', 'a.example.com')).toBeNull();
    table.cleanUp(challenge);
    expect(table.alpnContextFor('a.example.com')).toBeNull();
  });
});

describe('ChallengeTable with a relay (the daemon fleet)', () => {
  it('present resolves once the relay has the challenge; a relay clean-up error is ignored', async () => {
    const relayed: string[] = [];
    let release = () => {};
    const table = new ChallengeTable({
      present: (challenge) =>
        new Promise<void>((resolve) => {
          relayed.push(`present ${challenge.token}`);
          release = resolve;
        }),
      cleanUp: async (challenge) => {
        relayed.push(`clean ${challenge.token}`);
        throw new Error('a node went away');
      },
    });
    const challenge = { type: 'http-01' as const, identifier: 'a.test', token: 't1', keyAuthorization: 't1.k' };
    let done = false;
    const presented = Promise.resolve(table.present(challenge)).then(() => {
      done = true;
    });
    await new Promise((r) => setImmediate(r));
    // Answered here at once; the CA is not told to check until every node answers too.
    expect(table.respond('t1', 'a.test')).toBe('t1.k');
    expect(done).toBe(false);
    release();
    await presented;
    await table.cleanUp(challenge);
    expect(table.respond('t1', 'a.test')).toBeNull();
    expect(relayed).toEqual(['present t1', 'clean t1']);
  });
});

describe('ChallengePreference', () => {
  it('tries the configured order, the type that last worked with a CA first', () => {
    const preference = new ChallengePreference();
    expect(preference.order('ca1')).toEqual(['http-01', 'tls-alpn-01']);
    preference.succeeded('ca1', 'tls-alpn-01');
    expect(preference.order('ca1')).toEqual(['tls-alpn-01', 'http-01']);
    expect(preference.order('ca2')).toEqual(['http-01', 'tls-alpn-01']);
    expect(new ChallengePreference(['http-01', 'http-01']).order('ca1')).toEqual(['http-01']);
    expect(() => new ChallengePreference([])).toThrow(TypeError);
  });
});
