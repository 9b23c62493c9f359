import { createHash, createHmac } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { ReverseProxyHandler, UpstreamAddress } from '@proxyd/model';

/** One member of an {@link UpstreamPool}. Mutable health state, shared agent. */
export interface PoolMember {
  readonly address: UpstreamAddress;
  /** `host:port` (IPv6 in brackets), for logs and the Host of health probes. */
  readonly label: string;
  /** The keep-alive agent of this upstream (one per upstream and TLS setting). */
  readonly agent: http.Agent;
  /** `http://host:port` or `https://host:port`, parsed once (http-proxy-3's `target`). */
  readonly target: URL;
  /** False while active health checks see it failing. */
  healthy: boolean;
  /** Passive health: out of rotation until this time (ms since epoch); 0 when in. */
  downUntil: number;
  /** Requests in flight (least_conn). */
  active: number;
  /** `weighted_round_robin`: its weight (default 1) and its running score (nginx's smooth algorithm). */
  readonly weight: number;
  current: number;
  /** `cookie`: the value of the sticky cookie that names this member. */
  readonly sticky: string;
}

/** Supplies the shared keep-alive agent of an upstream. */
export type AgentFor = (address: UpstreamAddress) => http.Agent;

/**
 * What one process saw of an upstream's health, for the others serving
 * the same routes (a multi-core daemon's workers): an active probe's result
 * (`healthy`), or a passive failure (`downUntil`, ms since the epoch).
 * `upstream` is the member's `host:port` label; it applies to every pool
 * that has that member.
 */
export interface HealthEvent {
  upstream: string;
  healthy?: boolean;
  downUntil?: number;
}

/**
 * Health shared between processes: whether this one runs the active
 * probes (one process probes for all), and where its observations go.
 * Default (none): this process probes and keeps what it sees.
 */
export interface HealthSharing {
  probes: boolean;
  report(event: HealthEvent): void;
}

/**
 * The members of one `reverse_proxy` handler and how one is picked:
 * `round_robin` (default), `least_conn`, `random`, `ip_hash`, `first`. A
 * member is eligible when active checks pass and no passive failure holds it
 * out. Active checks (when `health.uri` is set) probe every member each
 * `interval_ms` with `GET uri`; a 2xx/3xx answer within `timeout_ms` is healthy.
 */
export class UpstreamPool {
  readonly members: readonly PoolMember[];
  /** `cookie` policy: the sticky cookie's name (default `lb`). */
  readonly cookieName: string;
  readonly #policy: ReverseProxyHandler['lb_policy'];
  readonly #failMs: number;
  readonly #health: ReverseProxyHandler['health'];
  readonly #tls: boolean;
  #cursor = 0;
  #timer: NodeJS.Timeout | null = null;
  #probes = new Set<http.ClientRequest>();
  readonly #sharing: HealthSharing | undefined;

  constructor(handler: ReverseProxyHandler, agentFor: AgentFor, sharing?: HealthSharing) {
    this.#sharing = sharing;
    this.members = handler.upstreams.map((address, index) => ({
      address,
      label: address.host.includes(':') ? `[${address.host}]:${address.port}` : `${address.host}:${address.port}`,
      agent: agentFor(address),
      target: new URL(
        `${handler.tls.enabled ? 'https' : 'http'}://${address.host.includes(':') ? `[${address.host}]` : address.host}:${address.port}`,
      ),
      healthy: true,
      downUntil: 0,
      active: 0,
      weight: handler.lb_policy === 'weighted_round_robin' ? (handler.lb_weights?.[index] ?? 1) : 1,
      current: 0,
      sticky: handler.lb_policy === 'cookie' ? stickyValue(address, handler.lb_cookie?.secret ?? null) : '',
    }));
    this.cookieName = handler.lb_cookie?.name ?? 'lb';
    this.#policy = handler.lb_policy;
    this.#failMs = handler.health.fail_duration_ms;
    this.#health = handler.health;
    this.#tls = handler.tls.enabled;
    if (handler.health.uri !== null && sharing?.probes !== false) {
      this.#timer = setInterval(() => this.checkNow(), handler.health.interval_ms);
      this.#timer.unref();
      this.checkNow();
    }
  }

  /** Whether the pool sticks clients to members with a cookie (`lb_policy cookie`). */
  get sticky(): boolean {
    return this.#policy === 'cookie';
  }

  /**
   * A member to send a request to, or null when none is eligible (the caller
   * answers 503). `cookie`: the request's Cookie header, read by the
   * `cookie` policy only.
   */
  pick(clientIp: string, cookie?: string): PoolMember | null {
    const members = this.members;
    const n = members.length;
    if (n === 1) {
      const only = members[0] as PoolMember;
      return eligible(only) ? only : null;
    }
    switch (this.#policy) {
      case 'cookie': {
        const value = cookie === undefined ? null : cookieValue(cookie, this.cookieName);
        if (value !== null) {
          for (const m of members) if (m.sticky === value && eligible(m)) return m;
        }
        return this.#roundRobin();
      }
      case 'weighted_round_robin': {
        // nginx's smooth weighted round robin: each eligible member gains its weight, the highest
        // score is picked and loses the total, so picks interleave in proportion to the weights.
        let best: PoolMember | null = null;
        let total = 0;
        for (const m of members) {
          if (m.weight <= 0 || !eligible(m)) continue;
          m.current += m.weight;
          total += m.weight;
          if (best === null || m.current > best.current) best = m;
        }
        if (best !== null) best.current -= total;
        return best;
      }
      case 'first':
        return this.#scan(0);
      case 'random':
        return this.#scan((Math.random() * n) | 0);
      case 'ip_hash':
        return this.#scan(hash(clientIp) % n);
      case 'least_conn': {
        let best: PoolMember | null = null;
        const start = this.#cursor++ % n;
        for (let i = 0; i < n; i++) {
          const m = members[(start + i) % n] as PoolMember;
          if (eligible(m) && (best === null || m.active < best.active)) best = m;
        }
        return best;
      }
      default:
        return this.#roundRobin();
    }
  }

  /**
   * A member for a retry: the policy's pick, unless that is `failed` (the
   * member the last try could not reach) and another is eligible.
   */
  pickAfter(failed: PoolMember, clientIp: string): PoolMember | null {
    const m = this.pick(clientIp);
    if (m !== failed) return m;
    for (const other of this.members) if (other !== failed && eligible(other)) return other;
    return m;
  }

  /** The `Set-Cookie` value that sticks a client to `member` (`cookie` policy). */
  stickyCookie(member: PoolMember): string {
    return `${this.cookieName}=${member.sticky}; Path=/; HttpOnly; SameSite=Lax`;
  }

  #roundRobin(): PoolMember | null {
    const n = this.members.length;
    const m = this.#scan(this.#cursor % n);
    this.#cursor = m === null ? this.#cursor : this.members.indexOf(m) + 1;
    return m;
  }

  /** Passive health: a connection to `member` failed; it leaves the rotation for `fail_duration`. */
  markFailed(member: PoolMember): void {
    if (this.#failMs <= 0) return;
    member.downUntil = Date.now() + this.#failMs;
    this.#sharing?.report({ upstream: member.label, downUntil: member.downUntil });
  }

  /** Applies what another process saw ({@link HealthEvent}) to this pool's member of that upstream, if any. */
  apply(event: HealthEvent): void {
    for (const member of this.members) {
      if (member.label !== event.upstream) continue;
      if (event.healthy !== undefined) {
        member.healthy = event.healthy;
        if (event.healthy) member.downUntil = 0;
      }
      if (event.downUntil !== undefined && event.downUntil > member.downUntil) member.downUntil = event.downUntil;
    }
  }

  /** Seconds until a member may be back (for `Retry-After`), at least 1. */
  retryAfterSeconds(): number {
    const now = Date.now();
    let soonest = Number.POSITIVE_INFINITY;
    for (const m of this.members) if (m.healthy && m.downUntil > now) soonest = Math.min(soonest, m.downUntil - now);
    if (soonest === Number.POSITIVE_INFINITY) soonest = this.#health.uri === null ? 1000 : this.#health.interval_ms;
    return Math.max(1, Math.ceil(soonest / 1000));
  }

  /** Runs one round of active probes now (tests and the interval timer). */
  checkNow(): void {
    const uri = this.#health.uri;
    if (uri === null) return;
    for (const member of this.members) this.#probe(member, uri);
  }

  /** Stops the health-check timer and in-flight probes. */
  close(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    for (const probe of this.#probes) probe.destroy();
    this.#probes.clear();
  }

  #scan(start: number): PoolMember | null {
    const members = this.members;
    const n = members.length;
    for (let i = 0; i < n; i++) {
      const m = members[(start + i) % n] as PoolMember;
      if (eligible(m)) return m;
    }
    return null;
  }

  #probe(member: PoolMember, uri: string): void {
    const mod = this.#tls ? https : http;
    const agentOptions = (member.agent as http.Agent & { options?: https.AgentOptions }).options ?? {};
    let done = false;
    const finish = (ok: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      this.#probes.delete(req);
      member.healthy = ok;
      if (ok) member.downUntil = 0;
      this.#sharing?.report({ upstream: member.label, healthy: ok });
    };
    const req = mod.request({
      host: member.address.host,
      port: member.address.port,
      path: uri,
      method: 'GET',
      agent: false,
      headers: { host: member.label, 'user-agent': 'proxyd-health-check', connection: 'close' },
      ...(this.#tls
        ? {
            ca: agentOptions.ca,
            servername: agentOptions.servername,
            rejectUnauthorized: agentOptions.rejectUnauthorized !== false,
          }
        : {}),
    });
    const timer = setTimeout(() => {
      finish(false);
      req.destroy();
    }, this.#health.timeout_ms);
    timer.unref();
    this.#probes.add(req);
    req.on('response', (res) => {
      const status = res.statusCode ?? 0;
      res.resume();
      finish(status >= 200 && status < 400);
    });
    req.on('error', () => finish(false));
    req.end();
  }
}

function eligible(m: PoolMember): boolean {
  return m.healthy && (m.downUntil === 0 || m.downUntil <= Date.now());
}

/** FNV-1a over the client IP string. */
function hash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** The sticky cookie's value for an upstream: an HMAC of its address with `secret`, else a plain hash (hex). */
function stickyValue(address: UpstreamAddress, secret: string | null): string {
  const label = `${address.host}:${address.port}`;
  const digest = secret === null ? createHash('sha256').update(label) : createHmac('sha256', secret).update(label);
  return digest.digest('hex').slice(0, 32);
}

/** The value of cookie `name` in a Cookie header, or null. */
function cookieValue(header: string, name: string): string | null {
  let at = header.indexOf(`${name}=`);
  while (at > 0 && header.charCodeAt(at - 1) !== 32 && header.charCodeAt(at - 1) !== 59) {
    at = header.indexOf(`${name}=`, at + 1);
  }
  if (at < 0) return null;
  const start = at + name.length + 1;
  const end = header.indexOf(';', start);
  return header.slice(start, end < 0 ? header.length : end).trim();
}
