import http from 'node:http';
import { defaultReverseProxy, type LbPolicy } from '@proxyd/model';
import { describe, expect, it } from 'vitest';
import { type HealthEvent, UpstreamPool } from './upstream-pool.js';

const agent = new http.Agent();
function pool(policy: LbPolicy, n = 3, failMs = 10_000): UpstreamPool {
  const handler = defaultReverseProxy(Array.from({ length: n }, (_, i) => ({ host: '127.0.0.1', port: 1000 + i })));
  handler.lb_policy = policy;
  handler.health.fail_duration_ms = failMs;
  return new UpstreamPool(handler, () => agent);
}
const ports = (p: UpstreamPool, times: number, ip = '1.2.3.4') =>
  Array.from({ length: times }, () => p.pick(ip)?.address.port);

describe('UpstreamPool', () => {
  it('round_robin cycles and skips a member held out by a passive failure', () => {
    const p = pool('round_robin');
    expect(ports(p, 4)).toEqual([1000, 1001, 1002, 1000]);
    p.markFailed(p.members[1] as never);
    expect(ports(p, 4)).toEqual([1002, 1000, 1002, 1000]);
  });

  it('first always takes the first eligible member', () => {
    const p = pool('first');
    expect(ports(p, 3)).toEqual([1000, 1000, 1000]);
    (p.members[0] as { healthy: boolean }).healthy = false;
    expect(ports(p, 2)).toEqual([1001, 1001]);
  });

  it('least_conn picks the member with the fewest requests in flight', () => {
    const p = pool('least_conn');
    (p.members[0] as { active: number }).active = 5;
    (p.members[1] as { active: number }).active = 1;
    (p.members[2] as { active: number }).active = 3;
    expect(ports(p, 3)).toEqual([1001, 1001, 1001]);
  });

  it('ip_hash is stable per client and moves on when that member is out', () => {
    const p = pool('ip_hash');
    const chosen = p.pick('203.0.113.5');
    expect(ports(p, 5, '203.0.113.5')).toEqual(Array(5).fill(chosen?.address.port));
    p.markFailed(chosen as never);
    const next = p.pick('203.0.113.5');
    expect(next).not.toBe(chosen);
    expect(ports(p, 3, '203.0.113.5')).toEqual(Array(3).fill(next?.address.port));
  });

  it('random only returns eligible members; none eligible → null and a Retry-After ≥ 1 s', () => {
    const p = pool('random', 2, 3_000);
    p.markFailed(p.members[0] as never);
    expect(new Set(ports(p, 20))).toEqual(new Set([1001]));
    p.markFailed(p.members[1] as never);
    expect(p.pick('x')).toBeNull();
    expect(p.retryAfterSeconds()).toBe(3);
  });

  it('fail_duration 0 disables passive checks', () => {
    const p = pool('round_robin', 1, 0);
    p.markFailed(p.members[0] as never);
    expect(p.pick('x')).not.toBeNull();
  });

  it('shares health: reports passive failures and probe results, applies what others saw, probes only if asked', async () => {
    const seen: string[] = [];
    const up = http.createServer((req, res) => {
      seen.push(req.url ?? '');
      res.statusCode = 503;
      res.end();
    });
    await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
    const port = (up.address() as { port: number }).port;
    const handler = () => {
      const h = defaultReverseProxy([{ host: '127.0.0.1', port }]);
      h.health.uri = '/healthz';
      h.health.interval_ms = 60_000;
      h.health.timeout_ms = 1000;
      return h;
    };
    const reports: HealthEvent[] = [];
    const prober = new UpstreamPool(handler(), () => agent, { probes: true, report: (e) => reports.push(e) });
    const follower = new UpstreamPool(handler(), () => agent, { probes: false, report: (e) => reports.push(e) });
    try {
      const label = `127.0.0.1:${port}`;
      for (let i = 0; i < 100 && reports.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
      // One probe, from the prober only.
      expect(seen).toEqual(['/healthz']);
      expect(reports).toEqual([{ upstream: label, healthy: false }]);
      expect(follower.pick('x')).not.toBeNull();
      follower.apply(reports[0] as HealthEvent);
      expect(follower.pick('x')).toBeNull();
      follower.apply({ upstream: label, healthy: true });
      expect(follower.pick('x')).not.toBeNull();
      // A passive failure seen by the follower goes out, and holds the member out where applied.
      follower.markFailed(follower.members[0] as never);
      const passive = reports[1] as HealthEvent;
      expect(passive.upstream).toBe(label);
      expect(passive.downUntil).toBeGreaterThan(Date.now());
      prober.apply({ upstream: label, healthy: true });
      prober.apply(passive);
      expect(prober.pick('x')).toBeNull();
      // Another upstream's event changes nothing here.
      const other = new UpstreamPool(defaultReverseProxy([{ host: '127.0.0.1', port: 1 }]), () => agent);
      other.apply(passive);
      expect(other.pick('x')).not.toBeNull();
    } finally {
      prober.close();
      follower.close();
      up.close();
    }
  });
});
