import { performance } from 'node:perf_hooks';

/** Options of {@link loopPacer}. */
export interface LoopPacerOptions {
  /** The share of the event loop's time issuance may keep it busy, 0–1 (default 0.5). */
  utilization?: number;
  /** The window the share is measured over, ms (default 100). */
  windowMs?: number;
  /** How long a paced attempt waits before it looks again, ms (default 25). */
  waitMs?: number;
}

/**
 * A pace for certificate attempts that leaves the event loop to whoever
 * else needs it (issue 30): before an attempt starts, it waits while the
 * loop was busy for more than `utilization` of the last `windowMs`
 * (`performance.eventLoopUtilization`). With 100,000 names to certify, the
 * local CA would otherwise keep the primary's loop busy for minutes, and a
 * route write or a worker's certificate request would wait behind it;
 * paced, issuance takes what the loop has spare. The resolved promise
 * costs nothing when the loop is idle enough.
 */
export function loopPacer(options: LoopPacerOptions = {}): () => Promise<void> {
  const limit = options.utilization ?? 0.5;
  const windowMs = options.windowMs ?? 100;
  const waitMs = options.waitMs ?? 25;
  let mark = performance.eventLoopUtilization();
  let markAt = performance.now();
  let busy = 0;
  const measure = (): number => {
    const now = performance.now();
    if (now - markAt >= windowMs) {
      const next = performance.eventLoopUtilization();
      busy = performance.eventLoopUtilization(next, mark).utilization;
      mark = next;
      markAt = now;
    }
    return busy;
  };
  return async () => {
    while (measure() > limit) await new Promise((resolve) => setTimeout(resolve, waitMs));
  };
}
