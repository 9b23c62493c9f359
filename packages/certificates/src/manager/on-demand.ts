import { isIP } from 'node:net';

/** Who certifies a name obtained on demand: the ACME CAs or the local CA (`tls internal { on_demand }`). */
export type OnDemandIssuer = 'acme' | 'internal';

/**
 * On-demand TLS (`on_demand_tls { ask <url> }` and `tls { on_demand }`): a
 * certificate for a name nobody listed is obtained at its first handshake,
 * if a route allows the name and the `ask` endpoint agrees.
 */
export interface OnDemandOptions {
  /** The ask endpoint: `GET <ask>?domain=<name>` must answer 2xx (redirects are not followed: a 3xx refuses). */
  ask: string;
  /**
   * Whether a route with `tls { on_demand }` matches `name`, and with which
   * issuer: `acme`, `internal` (`tls internal { on_demand }`), or null (no
   * such route: the handshake gets no certificate and the ask endpoint is
   * not asked).
   */
  allowed(name: string): OnDemandIssuer | null;
  /** How long the ask endpoint may take, ms (default 10,000). */
  fetchTimeoutMs?: number;
  /** How long a refusal is remembered, ms, so a flood of handshakes does not flood the endpoint (default 60,000). */
  refusalTtlMs?: number;
}

/** What the ask endpoint said: allowed, or refused with the reason (status, redirect, timeout, error). */
export type AskAnswer = { allowed: true } | { allowed: false; reason: string };

/** Default of {@link OnDemandOptions.fetchTimeoutMs}: 10 s. */
export const ON_DEMAND_ASK_TIMEOUT_MS = 10_000;
/** Default of {@link OnDemandOptions.refusalTtlMs}: 1 minute. */
export const ON_DEMAND_REFUSAL_TTL_MS = 60_000;
/** Refusals remembered at most (oldest dropped first): a flood of random names cannot grow memory without bound. */
const MAX_REMEMBERED = 10_000;

/**
 * Asks the ask endpoint about `name`: 2xx allows; a redirect (not
 * followed), any other status, a timeout or a network error refuses, with
 * the reason.
 */
export async function askEndpoint(ask: string, name: string, timeoutMs: number): Promise<AskAnswer> {
  let url: URL;
  try {
    url = new URL(ask);
  } catch {
    return { allowed: false, reason: `ask URL ${ask} is not a URL` };
  }
  url.searchParams.set('domain', name);
  try {
    const response = await fetch(url, { redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) });
    await response.body?.cancel().catch(() => {});
    if (response.status >= 200 && response.status < 300) return { allowed: true };
    const what = response.status >= 300 && response.status < 400 ? 'a redirect (not followed)' : 'status';
    return { allowed: false, reason: `ask endpoint ${url.origin}${url.pathname} answered ${what} ${response.status}` };
  } catch (err) {
    const error = err as Error & { cause?: Error };
    const reason =
      error.name === 'TimeoutError'
        ? `timed out after ${timeoutMs} ms`
        : `${error.message}${error.cause ? `: ${error.cause.message}` : ''}`;
    return { allowed: false, reason: `ask endpoint ${url.origin}${url.pathname} failed: ${reason}` };
  }
}

/** A name SNI may carry and a CA may certify: a lowercase DNS name with at least two labels, no IP address. */
export function isOnDemandCandidate(name: string): boolean {
  if (name.length === 0 || name.length > 253 || isIP(name) !== 0) return false;
  return /^(?!-)[a-z0-9-]{1,63}(?<!-)(\.(?!-)[a-z0-9-]{1,63}(?<!-))+$/.test(name);
}

/**
 * Refusals of the ask endpoint, remembered for a while (bounded), and
 * whether each name's refusal was logged already: the log says once per
 * name why it was refused.
 */
export class RefusalMemory {
  readonly #until = new Map<string, number>();
  readonly #logged = new Set<string>();
  readonly #ttlMs: number;

  constructor(ttlMs: number) {
    this.#ttlMs = ttlMs;
  }

  /** Whether `name` was refused less than the TTL ago. */
  refused(name: string, now: number): boolean {
    const until = this.#until.get(name);
    if (until === undefined) return false;
    if (until > now) return true;
    this.#until.delete(name);
    return false;
  }

  /** Remembers a refusal of `name` at `now`; true when it is the first for that name (log it). */
  remember(name: string, now: number): boolean {
    this.#until.delete(name);
    if (this.#until.size >= MAX_REMEMBERED) this.#until.delete(this.#until.keys().next().value as string);
    this.#until.set(name, now + this.#ttlMs);
    if (this.#logged.has(name)) return false;
    if (this.#logged.size >= MAX_REMEMBERED) this.#logged.clear();
    this.#logged.add(name);
    return true;
  }
}
