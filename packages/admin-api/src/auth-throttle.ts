/**
 * Failed-authentication throttle, in the manner of fail2ban: per client,
 * `maxFailures` wrong tokens within `windowMs` lock the client out for
 * `lockoutMs`. Memory is bounded (`maxClients` entries, the oldest evicted
 * first), and so is logging: one event for a client's first failure of a
 * window, one for its lockout, and at most `maxEventsPerWindow` events per
 * `windowMs` for all clients together (the next event reports how many were
 * held back).
 */

/** What the throttle allows; every field has a default (`DEFAULT_AUTH_THROTTLE`). */
export interface AuthThrottleOptions {
  /** Failed attempts per client within `windowMs` that trigger a lockout (default 10). */
  maxFailures: number;
  /** Length of the fixed window, opened by a client's first failure, in ms (default 60 000). */
  windowMs: number;
  /** How long a lockout lasts, in ms from the failure that triggered it (default 60 000). */
  lockoutMs: number;
  /** Clients tracked at once; past it the oldest entry is dropped (default 10 000). */
  maxClients: number;
  /** Events reported per `windowMs` for all clients together (default 100). */
  maxEventsPerWindow: number;
}

/** The defaults: 10 failures a minute lock a client out for a minute. */
export const DEFAULT_AUTH_THROTTLE: Readonly<AuthThrottleOptions> = Object.freeze({
  maxFailures: 10,
  windowMs: 60_000,
  lockoutMs: 60_000,
  maxClients: 10_000,
  maxEventsPerWindow: 100,
});

/**
 * A failed-authentication event (never the token). `auth_failure`: the
 * client's first wrong token of a window; `auth_lockout`: the client is
 * refused for `retry_after` seconds. `suppressed` counts the events held
 * back since the last one reported (omitted when none).
 */
export type AuthEvent =
  | { action: 'auth_failure'; client: string; failures: number; suppressed?: number }
  | { action: 'auth_lockout'; client: string; failures: number; retry_after: number; suppressed?: number };

/** The throttle's state and decisions; times are ms since the epoch. */
export interface AuthThrottle {
  /** Whole seconds (≥ 1) until `client` may try again, or 0 when it is not locked out. */
  lockedFor(client: string, now: number): number;
  /** Records a wrong token; returns the event to log, if any. */
  fail(client: string, now: number): AuthEvent | undefined;
  /** A correct token clears the client's failures. */
  succeed(client: string): void;
  /** Clients tracked now. */
  readonly size: number;
}

interface Entry {
  windowStart: number;
  failures: number;
  /** 0 while not locked out. */
  lockedUntil: number;
}

/** Creates a throttle; options not given take `DEFAULT_AUTH_THROTTLE`. */
export function createAuthThrottle(options: Partial<AuthThrottleOptions> = {}): AuthThrottle {
  const o = { ...DEFAULT_AUTH_THROTTLE, ...options };
  // Insertion order is age: a lockout re-inserts its entry, so the first key is the one to drop.
  const clients = new Map<string, Entry>();
  let eventWindowStart = Number.NEGATIVE_INFINITY;
  let events = 0;
  let suppressed = 0;

  const expired = (e: Entry, now: number) =>
    e.lockedUntil > 0 ? now >= e.lockedUntil : now >= e.windowStart + o.windowMs || now < e.windowStart;

  const report = (event: AuthEvent, now: number): AuthEvent | undefined => {
    if (now >= eventWindowStart + o.windowMs || now < eventWindowStart) {
      eventWindowStart = now;
      events = 0;
    }
    if (events >= o.maxEventsPerWindow) {
      suppressed++;
      return undefined;
    }
    events++;
    if (suppressed === 0) return event;
    const withCount = { ...event, suppressed };
    suppressed = 0;
    return withCount;
  };

  return {
    lockedFor(client, now) {
      const e = clients.get(client);
      if (e === undefined) return 0;
      if (expired(e, now)) {
        clients.delete(client);
        return 0;
      }
      return e.lockedUntil > 0 ? Math.max(1, Math.ceil((e.lockedUntil - now) / 1000)) : 0;
    },
    fail(client, now) {
      let e = clients.get(client);
      if (e !== undefined && expired(e, now)) {
        clients.delete(client);
        e = undefined;
      }
      if (e === undefined) {
        if (clients.size >= o.maxClients) {
          const oldest = clients.keys().next();
          if (!oldest.done) clients.delete(oldest.value);
        }
        e = { windowStart: now, failures: 0, lockedUntil: 0 };
        clients.set(client, e);
      }
      e.failures++;
      if (e.failures >= o.maxFailures) {
        e.lockedUntil = now + o.lockoutMs;
        clients.delete(client);
        clients.set(client, e);
        const retryAfter = Math.max(1, Math.ceil(o.lockoutMs / 1000));
        return report({ action: 'auth_lockout', client, failures: e.failures, retry_after: retryAfter }, now);
      }
      return e.failures === 1 ? report({ action: 'auth_failure', client, failures: 1 }, now) : undefined;
    },
    succeed(client) {
      if (clients.size > 0) clients.delete(client);
    },
    get size() {
      return clients.size;
    },
  };
}

/**
 * The key a client is throttled by: its IPv4 address (also when written
 * IPv4-mapped, `::ffff:192.0.2.1`), or the /64 of its IPv6 address — one
 * host commonly holds a whole /64, so per-address keys would let it rotate
 * past the limit and flush the table.
 */
export function clientKey(ip: string | undefined): string {
  if (ip === undefined || ip.length === 0) return 'unknown';
  const v4mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(ip);
  if (v4mapped) return v4mapped[1] as string;
  if (!ip.includes(':')) return ip;
  const bare = ip.split('%')[0] as string;
  const [head = '', tail] = bare.split('::');
  const groupsOf = (part: string | undefined) => (part === undefined || part === '' ? [] : part.split(':'));
  const width = (parts: string[]) => parts.reduce((n, p) => n + (p.includes('.') ? 2 : 1), 0);
  const h = groupsOf(head);
  const t = groupsOf(tail);
  const zeros = tail === undefined ? [] : Array<string>(Math.max(0, 8 - width(h) - width(t))).fill('0');
  const groups = [...h, ...zeros, ...t].slice(0, 4).map((g) => (Number.parseInt(g, 16) || 0).toString(16));
  return `${groups.join(':')}::/64`;
}
