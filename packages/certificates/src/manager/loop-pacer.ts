import { performance } from 'node:perf_hooks';

/** Options of {@link loopPacer}. */
export interface LoopPacerOptions {
  /**
   * The share of the last window the event loop may have been busy, and the
   * process's CPU time (every thread: libuv's pool signs and syncs) may
   * have filled of one core, 0–1 (default 0.5).
   */
  utilization?: number;
  /** The window the share is measured over, ms (default 100). */
  windowMs?: number;
  /** How long a paced attempt waits before it looks again, ms (default 25). */
  waitMs?: number;
}

/**
 * A pace for certificate attempts that leaves the event loop and the CPU
 * to whoever else needs them (issue 30): before an attempt starts, it waits
 * while the loop was busy for more than `utilization` of the last
 * `windowMs` (`performance.eventLoopUtilization`), or the process used
 * more than that share of one core (`process.cpuUsage`: the key pairs,
 * signatures and fsyncs run on libuv's pool, off the loop, and on a
 * 2-core node the workers serving traffic need the rest). With 100,000 names to certify, the
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
  let cpuMark = process.cpuUsage();
  let markAt = performance.now();
  let busy = 0;
  const measure = (): number => {
    const now = performance.now();
    if (now - markAt >= windowMs) {
      const next = performance.eventLoopUtilization();
      const cpu = process.cpuUsage(cpuMark);
      const cpuShare = (cpu.user + cpu.system) / 1000 / (now - markAt);
      busy = Math.max(performance.eventLoopUtilization(next, mark).utilization, cpuShare);
      mark = next;
      cpuMark = process.cpuUsage();
      markAt = now;
    }
    return busy;
  };
  return async () => {
    while (measure() > limit) await new Promise((resolve) => setTimeout(resolve, waitMs));
  };
}
