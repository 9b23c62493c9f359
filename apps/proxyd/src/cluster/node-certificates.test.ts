import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { FileStorage, LocalCa } from '@proxyd/certificates';
import { type CertificatePem, CertificateSync } from '@proxyd/cluster';
import { describe, expect, it } from 'vitest';
import { NodeCertificateStore } from './node-certificates.js';

async function issued(...names: string[]): Promise<CertificatePem[]> {
  const dir = await mkdtemp(path.join(tmpdir(), 'proxyd-cluster-ca-'));
  try {
    const ca = await LocalCa.open(new FileStorage(dir));
    const out: CertificatePem[] = [];
    for (const name of names) {
      const issued = await ca.issue([name]);
      out.push({ name, cert: issued.certPem, key: issued.keyPem });
    }
    return out;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe('certificates in workers', () => {
  it('CertificateSync sends what changed and drops what is gone; the worker store follows', async () => {
    const [a, b, b2] = await issued('a.localhost', 'b.localhost', 'b.localhost');
    const sync = new CertificateSync();
    const store = new NodeCertificateStore(null);
    store.apply(sync.all([a as CertificatePem]));
    expect(store.names()).toEqual(['a.localhost']);
    expect(sync.diff([a as CertificatePem])).toMatchObject({ set: [a], drop: [] });
    expect(sync.diff([a as CertificatePem])).toBeNull();
    const added = sync.diff([a as CertificatePem, b as CertificatePem]);
    expect(added).toEqual({ set: [b], drop: [] });
    store.apply(added as never);
    expect(store.has('b.localhost')).toBe(true);
    const renewed = sync.diff([b2 as CertificatePem]);
    expect(renewed).toEqual({ set: [b2], drop: ['a.localhost'] });
    store.apply(renewed as never);
    expect(store.names()).toEqual(['b.localhost']);
    expect(store.contextFor('a.localhost')).toBeNull();
  });

  it('serves a *.parent certificate for one more label, and reports one that does not load', async () => {
    const [wild] = await issued('*.apps.localhost');
    const store = new NodeCertificateStore(null);
    const bad: string[] = [];
    store.apply(
      { set: [wild as CertificatePem, { name: 'x.localhost', cert: 'nope', key: 'nope' }], drop: [] },
      (name) => bad.push(name),
    );
    expect(store.has('web.apps.localhost')).toBe(true);
    expect(store.has('a.web.apps.localhost')).toBe(false);
    expect(bad).toEqual(['x.localhost']);
  });

  it('asks the primary once per name for an on-demand certificate, and keeps the answer', async () => {
    const [pem] = await issued('shop.localhost');
    const asked: string[] = [];
    const store = new NodeCertificateStore(async (name) => {
      asked.push(name);
      await new Promise((r) => setTimeout(r, 10));
      return name === 'shop.localhost' ? (pem as CertificatePem) : null;
    });
    const [one, two] = await Promise.all([store.contextFor('Shop.localhost'), store.contextFor('shop.localhost')]);
    expect(one).not.toBeNull();
    expect(two).toBe(one);
    expect(store.contextFor('shop.localhost')).toBe(one);
    expect(await store.contextFor('refused.localhost')).toBeNull();
    expect(asked).toEqual(['shop.localhost', 'refused.localhost']);
  });
});
