import { readFile } from 'node:fs/promises';
import type { Config, GlobalOptions, RouteSnapshot, RouteSpec } from '@proxyd/model';
import { autoHttpsFor, autoHttpsObtainsCertificates, changesFrom, stateOf } from '@proxyd/model/rules';
import { AcmeIssuer, type ChallengeSolver } from '../acme/index.js';
import { createDns01Solver, type DnsChallengeSettings } from '../dns/index.js';
import { isLocalName, LocalCa } from '../local-ca/local-ca.js';
import {
  type CertificateLogger,
  CertificateManager,
  ChallengeTable,
  type ManagedName,
  type NameChanges,
} from '../manager/index.js';
import { loopPacer } from '../manager/loop-pacer.js';
import type { CertificateSummary } from '../schedule/index.js';
import { FileStorage } from '../storage/file-storage.js';
import type { CertificateStorage } from '../storage/storage.js';

/** Let's Encrypt production: the CA of names the Proxyfile does not give an `acme_ca` for (spec §1). */
export const DEFAULT_ACME_CA = 'https://acme-v02.api.letsencrypt.org/directory';

/**
 * The names automatic HTTPS maintains for a route set (the model's
 * `autoHttpsFor` says which), and who certifies
 * each: `tls internal` → the local CA; otherwise a name with no public
 * suffix (`localhost`, `.test`, an IP address, …) → the local CA unless the
 * Proxyfile names a CA (`acme_ca`), since no public CA would issue it; every
 * other name → the ACME CAs. Routes with `tls { on_demand }` are left to the
 * handshake. Empty with `auto_https off` or `disable_certs`.
 */
export function managedNames(routes: readonly RouteSpec[], global: GlobalOptions): ManagedName[] {
  const names = new CertifiedNames(global);
  names.update({ routes, version: 0, changes: null });
  return names.names();
}

/**
 * The DNS-01 settings of an `acme` name of `route`: the site's `tls { dns }`
 * (its provider, or the global `acme_dns` when it names none), else the
 * global `acme_dns` with default propagation; null without a provider
 * (HTTP-01/TLS-ALPN-01).
 */
export function dnsSettingsFor(route: RouteSpec, global: GlobalOptions): DnsChallengeSettings | null {
  const site = route.site.tls.dns ?? null;
  const provider = site?.provider ?? global.acme_dns ?? null;
  if (provider === null) return null;
  return {
    provider,
    propagation_timeout_ms: site?.propagation_timeout_ms ?? null,
    resolvers: site?.resolvers ?? [],
    authoritative_port: site?.authoritative_port ?? null,
  };
}

/** Which issuer certifies `name` for a route that wants HTTPS (see {@link managedNames}). */
function issuerFor(route: RouteSpec, name: string, global: GlobalOptions): ManagedName['issuer'] {
  return route.site.tls.mode === 'internal' || (global.acme_ca.length === 0 && isLocalName(name)) ? 'internal' : 'acme';
}

/**
 * The on-demand rule: a handshake's server name may get a certificate at
 * the first handshake when a route with `tls { on_demand }` serves it — its
 * exact domain, or a `*.parent` wildcard covering exactly one more label.
 * Returns who certifies it, or null.
 */
export function onDemandIssuer(
  routes: readonly RouteSpec[],
  global: GlobalOptions,
  name: string,
): ManagedName['issuer'] | null {
  const names = new CertifiedNames(global);
  names.update({ routes, version: 0, changes: null });
  return names.onDemandIssuer(name);
}

/**
 * What automatic HTTPS wants of a changing route set: the managed names
 * ({@link managedNames}) and the on-demand routes ({@link onDemandIssuer}),
 * kept per change. A snapshot from the route store carries what changed
 * since the one before (`RouteChanges`): when their base is the routes taken
 * last, an update costs O(changed routes), else O(n); an on-demand lookup
 * is O(1) (a handshake for an unknown name never scans the routes).
 */
export class CertifiedNames {
  readonly #global: GlobalOptions;
  readonly #off: boolean;
  readonly #solverFor: ((settings: DnsChallengeSettings) => ChallengeSolver) | undefined;
  /** One solver per distinct DNS-01 settings (JSON), shared by the names that use them. */
  readonly #solvers = new Map<string, ChallengeSolver>();
  /** The {@link stateOf} the last snapshot taken: the next changes apply to it. */
  #state: object | null = null;
  /** Lowercase name → issuer, and the JSON of its DNS-01 settings or null, in the order first seen. */
  readonly #names = new Map<string, { issuer: ManagedName['issuer']; dns: string | null }>();
  /** Lowercase domain → route, for routes with `tls { on_demand }` that want a managed certificate. */
  readonly #onDemand = new Map<string, RouteSpec>();
  /** Names added, changed or removed since the last {@link takeChanges}. */
  readonly #touched = new Set<string>();

  /** `solverFor` builds the DNS-01 solver of a site's settings (the daemon's; absent: names carry no solver). */
  constructor(global: GlobalOptions, solverFor?: (settings: DnsChallengeSettings) => ChallengeSolver) {
    this.#global = global;
    this.#off = !autoHttpsObtainsCertificates(global.auto_https);
    this.#solverFor = solverFor;
  }

  /** Takes a new route set; true when the managed names changed. */
  update(snapshot: RouteSnapshot): boolean {
    const changes = changesFrom(this.#state, snapshot);
    this.#state = stateOf(snapshot);
    if (this.#off) return false;
    let changed = false;
    if (changes !== null) {
      for (const domain of changes.removed) {
        this.#onDemand.delete(domain);
        if (this.#names.delete(domain)) {
          this.#touched.add(domain);
          changed = true;
        }
      }
      for (const route of changes.upserted) if (this.#take(route)) changed = true;
      return changed;
    }
    changed = this.#names.size > 0;
    for (const name of this.#names.keys()) this.#touched.add(name);
    this.#names.clear();
    this.#onDemand.clear();
    for (const route of snapshot.routes) if (this.#take(route)) changed = true;
    return changed;
  }

  /** The names to certify and who certifies each. */
  names(): ManagedName[] {
    return [...this.#names].map(([name, known]) => this.#managed(name, known));
  }

  /**
   * What changed in {@link names} since the last call (all of it at the
   * first): names added or whose issuer or DNS settings changed, and names
   * removed. O(changed names).
   */
  takeChanges(): NameChanges {
    const add: ManagedName[] = [];
    const remove: string[] = [];
    for (const name of this.#touched) {
      const known = this.#names.get(name);
      if (known === undefined) remove.push(name);
      else add.push(this.#managed(name, known));
    }
    this.#touched.clear();
    return { add, remove };
  }

  #managed(name: string, { issuer, dns }: { issuer: ManagedName['issuer']; dns: string | null }): ManagedName {
    if (dns === null || this.#solverFor === undefined) return { name, issuer };
    let solver = this.#solvers.get(dns);
    if (solver === undefined) {
      solver = this.#solverFor(JSON.parse(dns) as DnsChallengeSettings);
      this.#solvers.set(dns, solver);
    }
    return { name, issuer, dns: solver };
  }

  /** Who certifies `name` on demand (see {@link onDemandIssuer}), or null. */
  onDemandIssuer(name: string): ManagedName['issuer'] | null {
    if (this.#off) return null;
    const host = name.toLowerCase();
    const dot = host.indexOf('.');
    const match = this.#onDemand.get(host) ?? (dot > 0 ? this.#onDemand.get(`*${host.slice(dot)}`) : undefined);
    return match === undefined ? null : issuerFor(match, host, this.#global);
  }

  /** Records what `route` wants; true when its managed name changed. */
  #take(route: RouteSpec): boolean {
    const domain = route.domain.toLowerCase();
    const { certificate } = autoHttpsFor(route, this.#global);
    if (certificate === 'on_demand') this.#onDemand.set(domain, route);
    else this.#onDemand.delete(domain);
    const issuer = certificate === 'managed' ? issuerFor(route, domain, this.#global) : null;
    if (issuer === null) {
      if (!this.#names.delete(domain)) return false;
      this.#touched.add(domain);
      return true;
    }
    const settings = issuer === 'acme' ? dnsSettingsFor(route, this.#global) : null;
    const dns = settings === null ? null : JSON.stringify(settings);
    const known = this.#names.get(domain);
    if (known?.issuer === issuer && known.dns === dns) return false;
    this.#names.set(domain, { issuer, dns });
    this.#touched.add(domain);
    return true;
  }
}

/** What the daemon holds of automatic HTTPS. */
export interface CertificateWiring {
  readonly manager: CertificateManager;
  /** Makes the manager maintain the names the snapshot's routes want (never rejects). */
  setRoutes(snapshot: RouteSnapshot): Promise<void>;
  /** The rows of `GET /certificates`. */
  status(): CertificateSummary[];
  close(): void;
}

/** Options of {@link createCertificateWiring}. */
export interface CertificateWiringOptions {
  /** The cert dir (`--cert-dir`): the file storage, unless `storage` is given. */
  certDir: string;
  /** The storage to use instead of the cert dir (the daemon's Redis storage, global option `storage redis`). */
  storage?: CertificateStorage;
  logger: CertificateLogger;
  /** The table that presents challenges (default a new one; a multi-core daemon's also tells its workers). */
  challengeTable?: ChallengeTable;
  /** Called once a certificate this process obtained is stored (the manager's `onObtained`). */
  onObtained?: (name: string) => void;
  /** Loaded certificates the manager keeps in memory (`PROXY_CERT_CACHE`; default 10,000). */
  cacheCapacity?: number;
}

/**
 * Builds automatic HTTPS from the global options: the given storage or the
 * file storage in the cert dir, the local CA (opened at the first internal name), one ACME issuer per
 * `acme_ca` (Let's Encrypt when none is named), all sharing one challenge
 * table, and the manager over them. Nothing is contacted until a name needs
 * a certificate.
 */
export async function createCertificateWiring(
  config: Config,
  options: CertificateWiringOptions,
): Promise<CertificateWiring> {
  const { global } = config;
  const storage = options.storage ?? new FileStorage(options.certDir);
  const challengeTable = options.challengeTable ?? new ChallengeTable();
  const certified = new CertifiedNames(global, (settings) =>
    createDns01Solver(settings, {}, (error) =>
      options.logger.error(
        { code: error.code, provider: settings.provider.name, error: error.message },
        `DNS provider ${settings.provider.name} is not usable: ${error.message}; its names fail until the configuration is fixed`,
      ),
    ),
  );
  const caRootPem = global.acme_ca_root === null ? undefined : await readCaRoot(global.acme_ca_root);
  const directories = global.acme_ca.length > 0 ? global.acme_ca : [DEFAULT_ACME_CA];
  const acmeIssuers = directories.map(
    (directoryUrl) =>
      new AcmeIssuer({
        directoryUrl,
        storage,
        solver: challengeTable,
        ...(global.email === null ? {} : { email: global.email }),
        ...(caRootPem === undefined ? {} : { caRootPem }),
        ...(global.acme_eab === null
          ? {}
          : { externalAccountBinding: { keyId: global.acme_eab.key_id, hmacKey: global.acme_eab.mac_key } }),
      }),
  );
  const manager = new CertificateManager({
    storage,
    localCa: () => LocalCa.open(storage),
    acmeIssuers,
    challengeTable,
    ...(global.on_demand_ask === null
      ? {}
      : { onDemand: { ask: global.on_demand_ask, allowed: (name: string) => certified.onDemandIssuer(name) } }),
    keyType: global.key_type === 'rsa2048' ? 'rsa' : 'ecdsa',
    logger: options.logger,
    ...(options.onObtained === undefined ? {} : { onObtained: options.onObtained }),
    ...(options.cacheCapacity === undefined ? {} : { cacheCapacity: options.cacheCapacity }),
    // Issuance leaves half of the event loop to route writes and the workers' certificate requests.
    pace: loopPacer(),
  });
  return {
    manager,
    setRoutes(next) {
      // Only what changed reaches the manager: a route write costs O(changed names), not O(names).
      if (!certified.update(next)) return Promise.resolve();
      return manager.updateNames(certified.takeChanges());
    },
    status: () => manager.status(),
    // An order already sent finishes in the background (its certificate is stored); shutdown does not wait for it.
    close: () => manager.close(),
  };
}

/** Reads `acme_ca_root`; a missing or unreadable file is a start error naming it. */
async function readCaRoot(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    throw new Error(`acme_ca_root ${file}: ${(err as Error).message}`);
  }
}
