import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type SecureContext, TLSSocket } from 'node:tls';
import { describe, expect, it } from 'vitest';
import { selfSigned } from '../loopback.test-helpers.js';
import { type PulledCertificate, PulledCertificateStore } from './pulled-certificate-store.js';

/** A self-signed certificate for `name` (what the control plane would answer). */
function issued(name: string): PulledCertificate {
  const files = selfSigned([name]);
  return { name, cert: readFileSync(files.cert, 'utf8'), key: readFileSync(files.key, 'utf8') };
}

/** The leaf certificate a context serves. */
function leafOf(context: SecureContext | null): X509Certificate {
  const socket = new TLSSocket(null as never, { secureContext: context as SecureContext, isServer: true });
  const cert = socket.getX509Certificate();
  socket.destroy();
  return cert as X509Certificate;
}

/** A control plane answering `pems` by name (exact, else `*.parent`), counting its requests. */
function controlPlane(pems: PulledCertificate[]) {
  const asked: string[] = [];
  const byName = new Map(pems.map((pem) => [pem.name, pem]));
  const fetch = async (name: string) => {
    asked.push(name);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const dot = name.indexOf('.');
    return byName.get(name) ?? byName.get(`*${name.slice(dot)}`) ?? null;
  };
  return { asked, byName, fetch };
}

describe('certificates in workers: a bounded cache pulled on a miss', () => {
  it('starts empty, asks the control plane once per name on a miss and serves it, answering has() from the index', async () => {
    const cp = controlPlane([issued('a.localhost'), issued('b.localhost')]);
    const store = new PulledCertificateStore({ fetch: cp.fetch, served: ['a.localhost', 'b.localhost'] });
    expect(store.cached()).toEqual([]);
    expect(store.has('A.localhost')).toBe(true);
    expect(store.has('c.localhost')).toBe(false);
    const [one, two] = await Promise.all([store.contextFor('a.localhost'), store.contextFor('A.localhost')]);
    expect(one).not.toBeNull();
    expect(two).toBe(one);
    expect(store.contextFor('a.localhost')).toBe(one);
    expect(cp.asked).toEqual(['a.localhost']);
    expect(leafOf(one).subjectAltName).toContain('DNS:a.localhost');
    expect(store.stats()).toMatchObject({ hits: 1, misses: 1, evictions: 0, size: 1 });
    // A name no certificate serves is not asked (no on-demand TLS here).
    expect(store.contextFor('c.localhost')).toBeNull();
    expect(cp.asked).toEqual(['a.localhost']);
  });

  it('keeps at most `capacity` contexts, least recently used out, and asks again for an evicted one', async () => {
    const names = ['a.localhost', 'b.localhost', 'c.localhost'];
    const cp = controlPlane(names.map(issued));
    const store = new PulledCertificateStore({ fetch: cp.fetch, served: names, capacity: 2 });
    await store.contextFor('a.localhost');
    await store.contextFor('b.localhost');
    store.contextFor('a.localhost'); // a is now the most recent
    await store.contextFor('c.localhost');
    expect(store.cached()).toEqual(['a.localhost', 'c.localhost']);
    expect(store.stats()).toMatchObject({ evictions: 1, size: 2 });
    // b is still served (the redirect decision does not depend on the cache) and comes back at its handshake.
    expect(store.has('b.localhost')).toBe(true);
    expect(await store.contextFor('b.localhost')).not.toBeNull();
    expect(cp.asked).toEqual(['a.localhost', 'b.localhost', 'c.localhost', 'b.localhost']);
  });

  it('drops a renewed certificate and serves the new one at the next handshake; forgets an unserved name', async () => {
    const cp = controlPlane([issued('a.localhost'), issued('*.apps.localhost')]);
    const store = new PulledCertificateStore({ fetch: cp.fetch, served: ['a.localhost', '*.apps.localhost'] });
    const first = await store.contextFor('a.localhost');
    const renewed = issued('a.localhost');
    cp.byName.set('a.localhost', renewed);
    store.apply({ served: ['a.localhost'], unserved: [] });
    const second = await store.contextFor('a.localhost');
    expect(second).not.toBe(first);
    expect(leafOf(second).serialNumber).toBe(new X509Certificate(renewed.cert).serialNumber);
    // A wildcard serves one more label, kept under its own name.
    expect(store.has('web.apps.localhost')).toBe(true);
    expect(await store.contextFor('web.apps.localhost')).not.toBeNull();
    expect(store.contextFor('api.apps.localhost')).not.toBeInstanceOf(Promise);
    store.apply({ served: [], unserved: ['a.localhost'] });
    expect(store.has('a.localhost')).toBe(false);
    expect(store.contextFor('a.localhost')).toBeNull();
  });

  it('with on-demand TLS asks for an unknown name, and remembers a refusal for a while', async () => {
    const cp = controlPlane([issued('shop.localhost')]);
    let now = 0;
    const store = new PulledCertificateStore({ fetch: cp.fetch, served: [], askUnserved: true, now: () => now });
    expect(await store.contextFor('shop.localhost')).not.toBeNull();
    expect(store.has('shop.localhost')).toBe(true);
    expect(await store.contextFor('nope.localhost')).toBeNull();
    expect(store.contextFor('nope.localhost')).toBeNull();
    now += 10_001;
    expect(await store.contextFor('nope.localhost')).toBeNull();
    expect(cp.asked).toEqual(['shop.localhost', 'nope.localhost', 'nope.localhost']);
  });
});
