/** An opaque handle of a scheduled callback. */
export type TimerHandle = unknown;

/**
 * Where the manager schedules its checks and retries: real timers in the
 * daemon ({@link realScheduler}), a manual one in tests, so tests drive time
 * instead of sleeping.
 */
export interface Scheduler {
  /** Calls `callback` once after `ms` milliseconds. */
  setTimeout(callback: () => void, ms: number): TimerHandle;
  /** Cancels a callback not yet called; cancelling twice is not an error. */
  clearTimeout(handle: TimerHandle): void;
}

/** Node's timers, unref-ed: the manager's checks never keep the process alive. */
export const realScheduler: Scheduler = {
  setTimeout(callback, ms) {
    const timer = setTimeout(callback, Math.max(0, ms));
    timer.unref();
    return timer;
  },
  clearTimeout(handle) {
    clearTimeout(handle as NodeJS.Timeout);
  },
};
