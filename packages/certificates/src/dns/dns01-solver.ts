import { getServers } from 'node:dns';
import type { ChallengeSolver, PresentedChallenge } from '../acme/challenge-solver.js';
import { CertificatesError, CertificatesErrorCode } from '../errors.js';
import { type DnsServer, parseDnsServer } from './dns-client.js';
import { type DnsProvider, relativeTo, type TxtRecord } from './dns-provider.js';
import { waitForTxt } from './propagation.js';
import { challengeRecordName, findZone } from './zone.js';

/** Options of {@link Dns01Solver}. */
export interface Dns01SolverOptions {
  /** Adds and removes the TXT records. */
  provider: DnsProvider;
  /**
   * Resolvers for the CNAME, SOA and NS lookups, `host[:port]` (default the
   * system's, `/etc/resolv.conf`).
   */
  resolvers?: readonly string[];
  /**
   * How long the authoritative servers may take to answer the record, ms
   * (default 120,000); null skips the check (the CA is told at once).
   */
  propagationTimeoutMs?: number | null;
  /** How often the authoritative servers are asked again, ms (default 2,000). */
  propagationIntervalMs?: number;
  /** The authoritative servers' port (default 53). */
  authoritativePort?: number;
  /** The record's TTL, s (default 60). */
  ttl?: number;
  /** One DNS query's timeout, ms (default 5,000). */
  queryTimeoutMs?: number;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/** The DNS step of a DNS-01 challenge that failed, as `GET /certificates` shows it. */
export type DnsStep = 'zone-not-found' | 'update-refused' | 'not-propagated' | 'provider-invalid';

const STEP_BY_CODE: Readonly<Record<string, DnsStep>> = {
  [CertificatesErrorCode.DNS_ZONE_NOT_FOUND]: 'zone-not-found',
  [CertificatesErrorCode.DNS_UPDATE_REFUSED]: 'update-refused',
  [CertificatesErrorCode.DNS_NOT_PROPAGATED]: 'not-propagated',
  [CertificatesErrorCode.DNS_PROVIDER_INVALID]: 'provider-invalid',
};

/** The DNS step an error (or its causes) failed at, or null when it is not a DNS error. */
export function dnsStepOf(err: unknown): DnsStep | null {
  for (let at: unknown = err, depth = 0; at instanceof Error && depth < 5; at = at.cause, depth++) {
    const code = (at as { code?: unknown }).code;
    if (typeof code === 'string' && STEP_BY_CODE[code] !== undefined) return STEP_BY_CODE[code];
  }
  return null;
}

/**
 * Answers DNS-01 challenges through a {@link DnsProvider}, as lego and
 * certmagic do: the record goes at `_acme-challenge.<name>` (or at the end
 * of its CNAME chain), in the zone found by SOA lookup; `present` resolves
 * once every authoritative server of that zone answers it (unless the check
 * is skipped); `cleanUp` removes the value it added. Errors are
 * `CertificatesError`s whose code names the step: `CERT_DNS_ZONE_NOT_FOUND`,
 * `CERT_DNS_UPDATE_REFUSED`, `CERT_DNS_NOT_PROPAGATED`.
 */
export class Dns01Solver implements ChallengeSolver {
  readonly provider: DnsProvider;
  readonly #options: Dns01SolverOptions;
  readonly #resolvers: DnsServer[];
  /** `identifier value` → the record added for it. */
  readonly #presented = new Map<string, TxtRecord>();

  constructor(options: Dns01SolverOptions) {
    this.provider = options.provider;
    this.#options = options;
    const resolvers =
      options.resolvers !== undefined && options.resolvers.length > 0 ? options.resolvers : getServers();
    this.#resolvers = resolvers.map((text) => parseDnsServer(text));
  }

  async present(challenge: PresentedChallenge): Promise<void> {
    if (challenge.type !== 'dns-01') {
      throw new Error(`the DNS-01 solver answers dns-01 challenges only, not ${challenge.type}`);
    }
    const query = this.#options.queryTimeoutMs === undefined ? {} : { timeoutMs: this.#options.queryTimeoutMs };
    const fqdn = await challengeRecordName(challenge.identifier, this.#resolvers, query);
    const zone = await findZone(fqdn, this.#resolvers, query);
    const record: TxtRecord = {
      zone,
      fqdn,
      relativeName: relativeTo(fqdn, zone),
      value: challenge.keyAuthorization,
      ttl: this.#options.ttl ?? 60,
    };
    await this.provider.appendTxt(record);
    this.#presented.set(keyOf(challenge), record);
    if (this.#options.propagationTimeoutMs === null) return;
    await waitForTxt({
      fqdn,
      value: record.value,
      zone,
      resolvers: this.#resolvers,
      ...(this.#options.authoritativePort === undefined ? {} : { authoritativePort: this.#options.authoritativePort }),
      ...(this.#options.propagationTimeoutMs === undefined ? {} : { timeoutMs: this.#options.propagationTimeoutMs }),
      ...(this.#options.propagationIntervalMs === undefined ? {} : { intervalMs: this.#options.propagationIntervalMs }),
      ...query,
      ...(this.#options.now === undefined ? {} : { now: this.#options.now }),
      ...(this.#options.sleep === undefined ? {} : { sleep: this.#options.sleep }),
    });
  }

  async cleanUp(challenge: PresentedChallenge): Promise<void> {
    if (challenge.type !== 'dns-01') return;
    const record = this.#presented.get(keyOf(challenge));
    if (record === undefined) return;
    this.#presented.delete(keyOf(challenge));
    await this.provider.deleteTxt(record);
  }
}

function keyOf(challenge: PresentedChallenge): string {
  return `${challenge.identifier.toLowerCase()} ${challenge.keyAuthorization}`;
}

/** A `CERT_DNS_PROVIDER_INVALID` error. */
export function providerInvalid(message: string): CertificatesError {
  return new CertificatesError(CertificatesErrorCode.DNS_PROVIDER_INVALID, message);
}
