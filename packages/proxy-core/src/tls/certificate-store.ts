import { readFileSync } from 'node:fs';
import { createSecureContext, type SecureContext } from 'node:tls';
import type { RouteSpec } from '@proxyd/model';
import { DataPlaneError, DataPlaneErrorCode } from '../errors.js';

/**
 * Where the HTTPS listener gets certificates, by SNI server name. Manual
 * `tls <cert> <key>` files fill it now; the ACME manager fills it later.
 */
export interface CertificateStore {
  /**
   * The TLS context for a lowercase server name (exact, else the `*.parent`
   * wildcard), or null when there is none. May be async (e.g. on-demand ACME).
   */
  contextFor(serverName: string): SecureContext | null | Promise<SecureContext | null>;
  /** Whether a certificate for `host` is available now (decides the HTTP→HTTPS redirect). */
  has(host: string): boolean;
}

/** PEM certificate chain and private key. */
export interface CertificatePair {
  cert: string | Buffer;
  key: string | Buffer;
}

/** An in-memory {@link CertificateStore}: host (or `*.parent`) → secure context. */
export class MemoryCertificateStore implements CertificateStore {
  readonly #contexts = new Map<string, SecureContext>();
  /** How many keys are `*.parent`: without any, a miss costs no wildcard key. */
  #wildcards = 0;

  /** Installs (or replaces) the certificate of `host`; throws `PROXY_CERT_LOAD_FAILED` on bad PEM. */
  set(host: string, pair: CertificatePair): void {
    let context: SecureContext;
    try {
      context = createSecureContext({ cert: pair.cert, key: pair.key });
    } catch (cause) {
      throw new DataPlaneError(DataPlaneErrorCode.CERT_LOAD_FAILED, `invalid certificate for ${host}`, { cause });
    }
    const key = host.toLowerCase();
    if (key.startsWith('*.') && !this.#contexts.has(key)) this.#wildcards++;
    this.#contexts.set(key, context);
  }

  /** Removes the certificate of `host`. */
  delete(host: string): boolean {
    const key = host.toLowerCase();
    const deleted = this.#contexts.delete(key);
    if (deleted && key.startsWith('*.')) this.#wildcards--;
    return deleted;
  }

  /** How many hosts have a certificate. */
  get size(): number {
    return this.#contexts.size;
  }

  /** The hosts that have a certificate. */
  hosts(): string[] {
    return [...this.#contexts.keys()];
  }

  contextFor(serverName: string): SecureContext | null {
    const name = serverName.toLowerCase();
    const exact = this.#contexts.get(name);
    if (exact !== undefined || this.#wildcards === 0) return exact ?? null;
    const dot = name.indexOf('.');
    return dot > 0 ? (this.#contexts.get(`*${name.slice(dot)}`) ?? null) : null;
  }

  has(host: string): boolean {
    return this.contextFor(host) !== null;
  }
}

/**
 * The store the HTTPS listeners ask: manual `tls <cert> <key>` files first
 * (they win for every name they cover, exact or `*.parent`), else the
 * external store (the certificates package's manager, ACME and the local
 * CA), whose answer may be async. Without an external store it is the
 * manual store alone. A name neither has fails the handshake.
 */
export class LayeredCertificateStore implements CertificateStore {
  readonly #manual: MemoryCertificateStore;
  readonly #external: CertificateStore | undefined;

  constructor(manual: MemoryCertificateStore, external?: CertificateStore) {
    this.#manual = manual;
    this.#external = external;
  }

  contextFor(serverName: string): SecureContext | null | Promise<SecureContext | null> {
    // `size` first: with no manual file (the usual automatic-HTTPS case) the lookup is skipped.
    const manual = this.#manual.size === 0 ? null : this.#manual.contextFor(serverName);
    if (manual !== null || this.#external === undefined) return manual;
    return this.#external.contextFor(serverName);
  }

  has(host: string): boolean {
    return (this.#manual.size > 0 && this.#manual.has(host)) || (this.#external?.has(host) ?? false);
  }
}

/**
 * Loads the `tls <cert> <key>` files of every route whose site is manual into
 * `store`, replacing what an earlier call loaded and is gone now. Returns the
 * failures (unreadable or invalid files) instead of throwing, so one bad site
 * does not stop the others.
 */
export function loadManualCertificates(
  store: MemoryCertificateStore,
  routes: readonly RouteSpec[],
  loaded: Set<string> = new Set(),
): { loaded: Set<string>; errors: DataPlaneError[] } {
  const errors: DataPlaneError[] = [];
  const next = new Set<string>();
  for (const route of routes) {
    const tls = route.site.tls;
    if (tls.mode !== 'manual' || tls.cert_file === null || tls.key_file === null) continue;
    try {
      store.set(route.domain, { cert: readFileSync(tls.cert_file), key: readFileSync(tls.key_file) });
      next.add(route.domain);
    } catch (cause) {
      errors.push(
        cause instanceof DataPlaneError
          ? cause
          : new DataPlaneError(DataPlaneErrorCode.CERT_LOAD_FAILED, `cannot read certificate of ${route.domain}`, {
              cause,
            }),
      );
    }
  }
  for (const host of loaded) if (!next.has(host)) store.delete(host);
  return { loaded: next, errors };
}
