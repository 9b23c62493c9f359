import { readFileSync } from 'node:fs';
import { createSecureContext, type SecureContext } from 'node:tls';
import { describe, expect, it } from 'vitest';
import { selfSigned } from '../loopback.test-helpers.js';
import { type CertificateStore, LayeredCertificateStore, MemoryCertificateStore } from './certificate-store.js';

/** A stand-in for the certificates manager: fixed answers, every question recorded. */
function externalStore(
  entries: Record<string, SecureContext>,
  async = false,
): CertificateStore & { asked: string[]; hasAsked: string[] } {
  const asked: string[] = [];
  const hasAsked: string[] = [];
  return {
    asked,
    hasAsked,
    contextFor(name) {
      asked.push(name);
      const ctx = entries[name] ?? null;
      return async ? Promise.resolve(ctx) : ctx;
    },
    has(host) {
      hasAsked.push(host);
      return entries[host] !== undefined;
    },
  };
}

function manualStore(hosts: string[]): MemoryCertificateStore {
  const store = new MemoryCertificateStore();
  for (const host of hosts) {
    const files = selfSigned([host]);
    store.set(host, { cert: readFileSync(files.cert), key: readFileSync(files.key) });
  }
  return store;
}

describe('LayeredCertificateStore', () => {
  const fromExternal = createSecureContext();

  it('answers from the manual files for their names, exact or wildcard, without asking the external store', () => {
    const manual = manualStore(['a.test', '*.wild.test']);
    const external = externalStore({ 'a.test': fromExternal, 'x.wild.test': fromExternal });
    const store = new LayeredCertificateStore(manual, external);
    expect(store.contextFor('a.test')).toBe(manual.contextFor('a.test'));
    expect(store.contextFor('x.wild.test')).toBe(manual.contextFor('*.wild.test'));
    expect(store.contextFor('x.wild.test')).not.toBeNull();
    expect(store.has('a.test')).toBe(true);
    expect(store.has('x.wild.test')).toBe(true);
    expect(external.asked).toEqual([]);
    expect(external.hasAsked).toEqual([]);
  });

  it('asks the external store for every other name, a wildcard covering one label only', () => {
    const manual = manualStore(['a.test', '*.wild.test']);
    const external = externalStore({ 'b.test': fromExternal, 'y.x.wild.test': fromExternal });
    const store = new LayeredCertificateStore(manual, external);
    expect(store.contextFor('b.test')).toBe(fromExternal);
    expect(store.contextFor('y.x.wild.test')).toBe(fromExternal);
    expect(store.contextFor('wild.test')).toBeNull();
    expect(store.contextFor('c.test')).toBeNull();
    expect(external.asked).toEqual(['b.test', 'y.x.wild.test', 'wild.test', 'c.test']);
    expect(store.has('b.test')).toBe(true);
    expect(store.has('c.test')).toBe(false);
  });

  it('passes an async external answer through', async () => {
    const store = new LayeredCertificateStore(
      new MemoryCertificateStore(),
      externalStore({ 'b.test': fromExternal }, true),
    );
    const answer = store.contextFor('b.test');
    expect(answer).toBeInstanceOf(Promise);
    expect(await answer).toBe(fromExternal);
    expect(await store.contextFor('c.test')).toBeNull();
  });

  it('is the manual store alone without an external one', () => {
    const manual = manualStore(['a.test']);
    const store = new LayeredCertificateStore(manual);
    expect(store.contextFor('a.test')).toBe(manual.contextFor('a.test'));
    expect(store.contextFor('b.test')).toBeNull();
    expect(store.has('a.test')).toBe(true);
    expect(store.has('b.test')).toBe(false);
  });

  it('sees manual files added and removed later', () => {
    const manual = new MemoryCertificateStore();
    const external = externalStore({ 'a.test': fromExternal });
    const store = new LayeredCertificateStore(manual, external);
    expect(store.contextFor('a.test')).toBe(fromExternal);
    const files = selfSigned(['a.test']);
    manual.set('a.test', { cert: readFileSync(files.cert), key: readFileSync(files.key) });
    expect(store.contextFor('a.test')).toBe(manual.contextFor('a.test'));
    manual.delete('a.test');
    expect(store.contextFor('a.test')).toBe(fromExternal);
  });
});

describe('MemoryCertificateStore', () => {
  it('matches exact names before the one-label wildcard, case-insensitively', () => {
    const store = manualStore(['*.wild.test', 'exact.wild.test']);
    const wildcard = store.contextFor('*.wild.test');
    expect(store.contextFor('Exact.Wild.Test')).not.toBe(wildcard);
    expect(store.contextFor('other.wild.test')).toBe(wildcard);
    expect(store.contextFor('a.b.wild.test')).toBeNull();
    expect(store.delete('*.wild.test')).toBe(true);
    expect(store.contextFor('other.wild.test')).toBeNull();
    expect(store.hosts()).toEqual(['exact.wild.test']);
  });

  it('refuses a bad PEM with PROXY_CERT_LOAD_FAILED', () => {
    expect(() => new MemoryCertificateStore().set('a.test', { cert: 'nope', key: 'nope' })).toThrow(
      expect.objectContaining({ code: 'PROXY_CERT_LOAD_FAILED' }),
    );
  });
});
