import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { selfSigned } from '../loopback.test-helpers.js';
import { type PushedCertificate, PushedCertificateStore } from './pushed-certificate-store.js';

/** Self-signed certificates for `names`, one each (what the control plane would push). */
async function issued(...names: string[]): Promise<PushedCertificate[]> {
  return names.map((name) => {
    const files = selfSigned([name]);
    return { name, cert: readFileSync(files.cert, 'utf8'), key: readFileSync(files.key, 'utf8') };
  });
}

describe('certificates in workers', () => {
  it('installs what is pushed, replaces a renewed one and drops what is gone', async () => {
    const [a, b, b2] = (await issued('a.localhost', 'b.localhost', 'b.localhost')) as [
      PushedCertificate,
      PushedCertificate,
      PushedCertificate,
    ];
    const store = new PushedCertificateStore(null);
    store.apply({ set: [a], drop: [] });
    expect(store.names()).toEqual(['a.localhost']);
    store.apply({ set: [b], drop: [] });
    expect(store.has('b.localhost')).toBe(true);
    const before = store.contextFor('b.localhost');
    store.apply({ set: [b2], drop: ['a.localhost'] });
    expect(store.names()).toEqual(['b.localhost']);
    expect(store.contextFor('b.localhost')).not.toBe(before);
    expect(store.contextFor('a.localhost')).toBeNull();
  });

  it('serves a *.parent certificate for one more label, and reports one that does not load', async () => {
    const [wild] = await issued('*.apps.localhost');
    const store = new PushedCertificateStore(null);
    const bad: string[] = [];
    store.apply(
      { set: [wild as PushedCertificate, { name: 'x.localhost', cert: 'nope', key: 'nope' }], drop: [] },
      (name) => bad.push(name),
    );
    expect(store.has('web.apps.localhost')).toBe(true);
    expect(store.has('a.web.apps.localhost')).toBe(false);
    expect(bad).toEqual(['x.localhost']);
  });

  it('asks the primary once per name for an on-demand certificate, and keeps the answer', async () => {
    const [pem] = await issued('shop.localhost');
    const asked: string[] = [];
    const store = new PushedCertificateStore(async (name) => {
      asked.push(name);
      await new Promise((r) => setTimeout(r, 10));
      return name === 'shop.localhost' ? (pem as PushedCertificate) : null;
    });
    const [one, two] = await Promise.all([store.contextFor('Shop.localhost'), store.contextFor('shop.localhost')]);
    expect(one).not.toBeNull();
    expect(two).toBe(one);
    expect(store.contextFor('shop.localhost')).toBe(one);
    expect(await store.contextFor('refused.localhost')).toBeNull();
    expect(asked).toEqual(['shop.localhost', 'refused.localhost']);
  });
});
