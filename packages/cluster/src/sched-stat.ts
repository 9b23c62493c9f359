import { readFileSync } from 'node:fs';

/** What the scheduler counted for a process's main thread so far, ms. */
export interface SchedStat {
  /** Time it ran on a CPU. */
  cpuMs: number;
  /** Time it was ready to run and waited for a CPU (starved). */
  waitMs: number;
}

/**
 * The scheduler's counts of process `pid`'s main thread, from
 * /proc/<pid>/schedstat (nanoseconds, exact rather than sampled per tick);
 * null where they cannot be read (the process is gone, or not Linux).
 */
export function readSchedStat(pid: number): SchedStat | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/schedstat`, 'utf8');
  } catch {
    return null;
  }
  // "<ns on a CPU> <ns waiting on a run queue> <timeslices>"
  const [run, wait] = text.split(' ').map(Number);
  if (run === undefined || wait === undefined || !Number.isFinite(run) || !Number.isFinite(wait)) return null;
  return { cpuMs: run / 1e6, waitMs: wait / 1e6 };
}
