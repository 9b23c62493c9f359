import { isIP } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { CertificatesError, CertificatesErrorCode } from '../errors.js';
import { type DnsServer, formatDnsServer, query, queryAny, rcodeOf, recordData } from './dns-client.js';
import { normalizeName } from './dns-provider.js';

/** Default: how long a TXT record may take to reach every authoritative server, ms (certmagic's 2 min). */
export const DNS_PROPAGATION_TIMEOUT_MS = 120_000;
/** Default: how often the authoritative servers are asked again, ms. */
export const DNS_PROPAGATION_INTERVAL_MS = 2_000;

/** One authoritative server of a zone: its NS name and address. */
export interface AuthoritativeServer {
  name: string;
  server: DnsServer;
}

/**
 * The zone's authoritative servers: its NS names (asked of `resolvers`),
 * each with its addresses (glue when the answer carries it, else A and AAAA
 * asked of `resolvers`), on `port` (53 in the wild; a test server on a
 * high port).
 */
export async function authoritativeServers(
  zone: string,
  resolvers: readonly DnsServer[],
  port: number,
  options: { timeoutMs?: number } = {},
): Promise<AuthoritativeServer[]> {
  const answer = await queryAny(resolvers, zone, 'NS', options);
  const names = (answer.answers ?? [])
    .filter((rr) => rr.type === 'NS' && normalizeName(rr.name) === zone)
    .map((rr) => normalizeName(String(recordData(rr))));
  const servers: AuthoritativeServer[] = [];
  for (const name of [...new Set(names)]) {
    const glue = (answer.additionals ?? [])
      .filter((rr) => (rr.type === 'A' || rr.type === 'AAAA') && normalizeName(rr.name) === name)
      .map((rr) => String(recordData(rr)));
    let addresses = glue;
    if (addresses.length === 0) {
      for (const type of ['A', 'AAAA'] as const) {
        try {
          const found = await queryAny(resolvers, name, type, options);
          addresses = addresses.concat(
            (found.answers ?? []).filter((rr) => rr.type === type).map((rr) => String(recordData(rr))),
          );
        } catch {
          // A name server without an address of this family.
        }
      }
    }
    for (const host of new Set(addresses)) if (isIP(host) !== 0) servers.push({ name, server: { host, port } });
  }
  return servers;
}

/** Options of {@link waitForTxt}. */
export interface PropagationOptions {
  /** The record's name. */
  fqdn: string;
  /** The value every authoritative server must answer. */
  value: string;
  /** The zone holding it. */
  zone: string;
  /** Where the zone's NS names and their addresses are asked. */
  resolvers: readonly DnsServer[];
  /** The port of the authoritative servers (default 53). */
  authoritativePort?: number;
  /** Give up after this long, ms (default {@link DNS_PROPAGATION_TIMEOUT_MS}). */
  timeoutMs?: number;
  /** Ask again after this long, ms (default {@link DNS_PROPAGATION_INTERVAL_MS}). */
  intervalMs?: number;
  /** One query's timeout, ms. */
  queryTimeoutMs?: number;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * Waits until every authoritative server of the zone answers the TXT
 * value (asked directly, recursion off, so no resolver cache is between):
 * what the CA will see. Throws `CERT_DNS_NOT_PROPAGATED` naming the
 * servers that still lack it after the timeout (or none found).
 */
export async function waitForTxt(options: PropagationOptions): Promise<void> {
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? ((ms: number) => delay(ms));
  const timeoutMs = options.timeoutMs ?? DNS_PROPAGATION_TIMEOUT_MS;
  const deadline = now() + timeoutMs;
  const fqdn = normalizeName(options.fqdn);
  const queryOptions = options.queryTimeoutMs === undefined ? {} : { timeoutMs: options.queryTimeoutMs };
  let missing: string[] = [];
  for (;;) {
    let servers: AuthoritativeServer[] = [];
    try {
      servers = await authoritativeServers(
        options.zone,
        options.resolvers,
        options.authoritativePort ?? 53,
        queryOptions,
      );
      missing = servers.length === 0 ? [`no authoritative server of ${options.zone} found`] : [];
    } catch (err) {
      missing = [`the NS of ${options.zone}: ${(err as Error).message}`];
    }
    for (const { name, server } of servers) {
      try {
        const answer = await query(server, fqdn, 'TXT', { recursion: false, ...queryOptions });
        const values = (answer.answers ?? [])
          .filter((rr) => rr.type === 'TXT' && normalizeName(rr.name) === fqdn)
          .map((rr) => txtValue(recordData(rr)));
        if (!values.includes(options.value)) {
          missing.push(`${name} (${formatDnsServer(server)}) answers ${rcodeOf(answer)} without it`);
        }
      } catch (err) {
        missing.push(`${name}: ${(err as Error).message}`);
      }
    }
    if (missing.length === 0) return;
    if (now() >= deadline) break;
    await sleep(Math.max(0, Math.min(options.intervalMs ?? DNS_PROPAGATION_INTERVAL_MS, deadline - now())));
  }
  throw new CertificatesError(
    CertificatesErrorCode.DNS_NOT_PROPAGATED,
    `TXT ${fqdn} not propagated after ${timeoutMs / 1000} s: ${missing.join('; ')}`,
  );
}

/** A TXT record's value: its character strings joined (dns-packet gives Buffers, or one Buffer). */
function txtValue(data: unknown): string {
  const parts = Array.isArray(data) ? data : [data];
  return parts.map((part) => (Buffer.isBuffer(part) ? part.toString('utf8') : String(part))).join('');
}
