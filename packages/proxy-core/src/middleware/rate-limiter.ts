/** One client's counts: requests admitted in the previous and in the current 1-second window. */
interface Counter {
  previous: number;
  current: number;
}

/** One domain's keys, in two generations: seen in the current window, and in the one before. */
interface Generations {
  /** Index of the current window (floor(ms / 1000) of the limiter's clock). */
  window: number;
  current: Map<string, Counter>;
  previous: Map<string, Counter>;
  /** Shared by every new key that arrives while the current generation alone holds `maxKeys` keys. */
  readonly overflow: Counter;
}

/** Options of {@link RateLimiter}. */
export interface RateLimiterOptions {
  /** Requests per second admitted per key. */
  limit: number;
  /**
   * The clock, ms (default `performance.now()`, monotonic). A wall clock
   * works too: a step backwards is absorbed (time resumes from the last
   * reading), a step forwards only ages the windows.
   */
  now?: () => number;
  /** Hard cap on tracked keys per domain (default 100,000). */
  maxKeys?: number;
}

const WINDOW_MS = 1000;

const monotonicNow = (): number => performance.now();

/**
 * `rate_limit <n>/s`: per domain, per client, a sliding-window estimator
 * over 1-second windows: the previous window's count weighted by how much of
 * it still overlaps the last second, plus the current window's count. A
 * request is admitted when `previous × (1 − elapsed/1000) + current + 1 ≤ n`
 * (computed in integers, exact at the window edges); refused requests are
 * not counted.
 *
 * Keys ({@link rateLimitKey}): an IPv4 client by its address, an IPv6
 * client by its /64 (one host usually holds a whole /64, so per-address keys
 * would let it multiply its allowance and fill the key cap alone).
 *
 * Memory: keys live in two generations (seen in the current window / in the
 * previous one). When a window ends the older generation is dropped whole,
 * so a key idle for two windows — whose estimate is 0 — costs nothing and
 * needs no sweeping timer. At `maxKeys` (both generations together) the
 * previous generation is dropped early. If the current generation alone
 * holds `maxKeys`, every further new key of that window shares one overflow
 * counter: together they are admitted `n` requests a second, no more, and
 * the clients already tracked keep their own counts (a flood of fresh IPs
 * can neither grow the table nor pass unlimited).
 *
 * Per request: O(1); an IPv4 client, or a returning one, allocates nothing
 * (an IPv6 key is one short string).
 */
export class RateLimiter {
  readonly limit: number;
  readonly #clock: () => number;
  readonly #maxKeys: number;
  readonly #domains = new Map<string, Generations>();
  /** Last reading returned by {@link RateLimiter.#time}. */
  #last = Number.NEGATIVE_INFINITY;
  /** Added to the clock so that its readings never go backwards. */
  #skew = 0;

  constructor(options: RateLimiterOptions) {
    this.limit = options.limit;
    this.#clock = options.now ?? monotonicNow;
    this.#maxKeys = options.maxKeys ?? 100_000;
  }

  /** Counts a request of client `ip` on `domain`; false when it is over the limit. */
  admit(domain: string, ip: string): boolean {
    const now = this.#time();
    const window = Math.floor(now / WINDOW_MS);
    let gens = this.#domains.get(domain);
    if (gens === undefined) {
      gens = { window, current: new Map(), previous: new Map(), overflow: { previous: 0, current: 0 } };
      this.#domains.set(domain, gens);
    } else if (gens.window !== window) {
      const overflow = gens.overflow;
      if (gens.window === window - 1) {
        const spare = gens.previous;
        spare.clear();
        gens.previous = gens.current;
        gens.current = spare;
        overflow.previous = overflow.current;
      } else {
        gens.previous.clear();
        gens.current.clear();
        overflow.previous = 0;
      }
      overflow.current = 0;
      gens.window = window;
    }
    const key = ip.indexOf(':') < 0 ? ip : rateLimitKey(ip);
    let counter = gens.current.get(key);
    if (counter === undefined) {
      const old = gens.previous.get(key);
      if (old !== undefined) {
        gens.previous.delete(key);
        old.previous = old.current;
        old.current = 0;
        counter = old;
        gens.current.set(key, counter);
      } else {
        if (gens.current.size + gens.previous.size >= this.#maxKeys) gens.previous.clear();
        if (gens.current.size >= this.#maxKeys) {
          counter = gens.overflow;
        } else {
          counter = { previous: 0, current: 0 };
          gens.current.set(key, counter);
        }
      }
    }
    // previous × (1 − elapsed/1000) + current + 1 ≤ limit, scaled by 1000 to stay in integers.
    const remaining = WINDOW_MS - (now - window * WINDOW_MS);
    if (counter.previous * remaining + (counter.current + 1) * WINDOW_MS > this.limit * WINDOW_MS) return false;
    counter.current++;
    return true;
  }

  /** Keys tracked for `domain`, both generations (for tests and metrics). */
  size(domain: string): number {
    const gens = this.#domains.get(domain);
    return gens === undefined ? 0 : gens.current.size + gens.previous.size;
  }

  /** The clock in whole ms, never going backwards. */
  #time(): number {
    let t = this.#clock() + this.#skew;
    if (t < this.#last) {
      this.#skew += this.#last - t;
      t = this.#last;
    }
    this.#last = t;
    return Math.floor(t);
  }
}

/** Scratch space of {@link parseIpv6}: the eight 16-bit groups of the last address parsed. */
const GROUPS = new Uint16Array(8);

/**
 * The rate-limit key of a client address: an IPv4 address as is; an IPv6
 * address by its /64 (`2001:db8:1:2::/64`, whatever its spelling, zone id
 * ignored); an IPv4-mapped IPv6 address (`::ffff:192.0.2.1`) by its IPv4
 * form. `ip` is expected to be a valid address (as `ClientIpResolver`
 * gives); one that does not parse is its own key.
 */
export function rateLimitKey(ip: string): string {
  if (ip.indexOf(':') < 0) return ip;
  const cut = canonicalPrefixEnd(ip);
  if (cut > 0) return `${ip.slice(0, cut)}::/64`;
  if (!parseIpv6(ip)) return ip;
  const g = GROUPS;
  if (g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff) {
    const hi = g[6] as number;
    const lo = g[7] as number;
    return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  }
  return `${(g[0] as number).toString(16)}:${(g[1] as number).toString(16)}:${(g[2] as number).toString(16)}:${(g[3] as number).toString(16)}::/64`;
}

/**
 * Where the first four groups of `ip` end (the index of the fourth `:`) when
 * they are written as {@link rateLimitKey} writes them (lowercase hex, no
 * leading zeros, no `::` among them, not all zero); else -1. The common case
 * (Node's own spelling of a peer address) then needs no full parse.
 */
function canonicalPrefixEnd(ip: string): number {
  let i = 0;
  let nonZero = false;
  for (let group = 0; group < 4; group++) {
    const start = i;
    for (; i < ip.length; i++) {
      const c = ip.charCodeAt(i);
      if (!((c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66))) break;
    }
    const len = i - start;
    if (len === 0 || len > 4 || i >= ip.length || ip.charCodeAt(i) !== 0x3a) return -1;
    if (ip.charCodeAt(start) === 0x30) {
      if (len > 1) return -1;
    } else {
      nonZero = true;
    }
    if (group < 3) i++;
  }
  return nonZero ? i : -1;
}

function hexDigit(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  return -1;
}

/** Parses an IPv6 address (any RFC 4291 text form, optional `%zone`) into {@link GROUPS}; false when malformed. */
function parseIpv6(ip: string): boolean {
  const percent = ip.indexOf('%');
  const end = percent < 0 ? ip.length : percent;
  const g = GROUPS;
  let n = 0;
  let gap = -1;
  let i = 0;
  if (end >= 2 && ip.charCodeAt(0) === 0x3a && ip.charCodeAt(1) === 0x3a) {
    gap = 0;
    i = 2;
  } else if (end === 0 || ip.charCodeAt(0) === 0x3a) {
    return false;
  }
  while (i < end) {
    if (n >= 8) return false;
    let value = 0;
    let j = i;
    for (; j < end; j++) {
      const d = hexDigit(ip.charCodeAt(j));
      if (d < 0) break;
      value = value * 16 + d;
    }
    if (j < end && ip.charCodeAt(j) === 0x2e) {
      // A dotted IPv4 tail: the last 32 bits.
      if (n > 6 || !parseIpv4Tail(ip, i, end, n)) return false;
      n += 2;
      break;
    }
    if (j === i || j - i > 4) return false;
    g[n++] = value;
    if (j === end) break;
    if (ip.charCodeAt(j) !== 0x3a) return false;
    j++;
    if (j < end && ip.charCodeAt(j) === 0x3a) {
      if (gap >= 0) return false;
      gap = n;
      j++;
    } else if (j === end) {
      return false;
    }
    i = j;
  }
  if (gap < 0) return n === 8;
  if (n >= 8) return false;
  const tail = n - gap;
  for (let k = tail - 1; k >= 0; k--) g[8 - tail + k] = g[gap + k] as number;
  for (let k = gap; k < 8 - tail; k++) g[k] = 0;
  return true;
}

/** Parses `a.b.c.d` in `ip[from, end)` into groups `at` and `at + 1`. */
function parseIpv4Tail(ip: string, from: number, end: number, at: number): boolean {
  let octets = 0;
  let value = 0;
  let digits = 0;
  let word = 0;
  for (let j = from; j <= end; j++) {
    const c = j === end ? 0x2e : ip.charCodeAt(j);
    if (c === 0x2e) {
      if (digits === 0 || value > 255 || octets === 4) return false;
      word = word * 256 + value;
      octets++;
      value = 0;
      digits = 0;
    } else if (c >= 0x30 && c <= 0x39 && digits < 3) {
      value = value * 10 + (c - 0x30);
      digits++;
    } else {
      return false;
    }
  }
  if (octets !== 4) return false;
  GROUPS[at] = word >>> 16;
  GROUPS[at + 1] = word & 0xffff;
  return true;
}
