import { type ChildProcess, fork } from 'node:child_process';
import { Channel } from './channel.js';
import { readSchedStat } from './sched-stat.js';

/** The request a new worker gets first; it answers once it serves. */
export const INIT = 'cluster.init';

/** How long a starting worker may go without running or waiting to run when the pool is not told otherwise, ms. */
const DEFAULT_READY_TIMEOUT_MS = 60_000;
/** CPU time a starting worker may use without answering init when the pool is not told otherwise, ms. */
const DEFAULT_READY_CPU_MS = 30_000;
/** Wall time a starting worker may take however it progresses when the pool is not told otherwise, ms. */
const DEFAULT_READY_LIMIT_MS = 600_000;
/** The request that asks a worker to stop accepting, finish what it serves and exit. */
export const DRAIN = 'cluster.drain';

/** How {@link WorkerPool} forks and feeds its workers. */
export interface WorkerPoolOptions {
  /** Worker processes to run (≥ 1). */
  count: number;
  /** The module each worker runs. */
  entry: string;
  args?: string[];
  execArgv?: string[];
  env?: NodeJS.ProcessEnv;
  /**
   * The body of the {@link INIT} request of worker `index` (0-based, kept by
   * its replacement): built when that worker starts, so a replacement gets
   * the state of now (routes, certificates), not of the first start.
   */
  init(index: number): unknown;
  /** Registers the handlers of a new worker's channel (what workers may ask the primary); `pool` is usable before `start` resolves. */
  setup?(channel: Channel, index: number, pool: WorkerPool): void;
  /** A worker answered its init (first start or replacement): `answer` is what it returned. */
  onReady?(index: number, pid: number, answer: unknown): void;
  /** A worker exited when the pool was not stopping; it is replaced after `respawnInMs`. */
  onExit?(index: number, pid: number, code: number | null, signal: NodeJS.Signals | null, respawnInMs: number): void;
  /** A worker failed to start (init rejected or timed out); it is killed and replaced. */
  onStartFailure?(index: number, error: Error): void;
  /**
   * How long a starting worker may go without running or waiting to run
   * before it is killed as hung, ms (default 60 s). A worker that exits or
   * fails its init is noticed at once. One that is slow because it is
   * starved (a saturated machine) runs a little and waits for a CPU the
   * rest of the time: it is waited for, within `readyCpuMs` and
   * `readyLimitMs`. One that waits on something that does not come does
   * neither. Where the scheduler's counts cannot be read (no
   * /proc/<pid>/schedstat), this is the wall-time bound of a start.
   */
  readyTimeoutMs?: number;
  /**
   * CPU time a starting worker may use without answering init before it is
   * killed as hung (spinning), ms (default 30 s; a cold start uses about
   * 1 s).
   */
  readyCpuMs?: number;
  /**
   * Wall time a starting worker may take however it progresses, ms (default
   * 10 min): only a hang that uses a little CPU now and then reaches it.
   */
  readyLimitMs?: number;
  /** Replacement delays after consecutive quick crashes, ms (default 0, 250, 500, then 1000). */
  respawnDelaysMs?: readonly number[];
  /**
   * Keep one spare process started (its modules loaded, waiting for an
   * init): a crashed worker's replacement then only initialises, instead of
   * starting Node and loading every module while the other workers take the
   * load. Default false.
   */
  spare?: boolean;
}

interface Slot {
  index: number;
  child: ChildProcess | null;
  channel: Channel | null;
  ready: boolean;
  /** Consecutive crashes within 10 s of the previous start. */
  crashes: number;
  startedAt: number;
  timer: NodeJS.Timeout | undefined;
}

const DEFAULT_DELAYS = [0, 250, 500, 1000];

/**
 * Runs `count` worker processes of one entry module and keeps them running:
 * a worker that exits (crash, SIGKILL) is replaced at once, or after up to
 * 1 s when it keeps crashing, with a fresh {@link INIT} built from the state
 * of now. The listeners stay open meanwhile: each worker binds its own
 * (`reusePort`), so the others keep serving. {@link broadcast} and
 * {@link gather} reach every worker that is serving; {@link stop} drains
 * them.
 *
 * Workers are `child_process.fork`ed with structured-clone IPC
 * (`serialization: 'advanced'`: Buffers and typed arrays cross as they
 * are) and exit when the primary goes away (see `connectToPrimary`).
 */
export class WorkerPool {
  readonly #options: WorkerPoolOptions;
  readonly #slots: Slot[];
  #stopping = false;
  /** The started process a replacement takes ({@link WorkerPoolOptions.spare}); null while none. */
  #spare: { child: ChildProcess; channel: Channel } | null = null;
  #spareTimer: NodeJS.Timeout | undefined;

  private constructor(options: WorkerPoolOptions) {
    if (!Number.isInteger(options.count) || options.count < 1)
      throw new Error(`worker count must be ≥ 1, got ${options.count}`);
    this.#options = options;
    this.#slots = Array.from({ length: options.count }, (_, index) => ({
      index,
      child: null,
      channel: null,
      ready: false,
      crashes: 0,
      startedAt: 0,
      timer: undefined,
    }));
  }

  /**
   * Forks every worker and resolves once all answered init. When one fails
   * to start, every worker is stopped and the promise rejects with its
   * error (a daemon that cannot serve does not start half-way).
   */
  static async start(options: WorkerPoolOptions): Promise<WorkerPool> {
    const pool = new WorkerPool(options);
    try {
      await Promise.all(pool.#slots.map((slot) => pool.#spawn(slot, true)));
    } catch (err) {
      await pool.stop(1000);
      throw err;
    }
    if (options.spare === true) pool.#forkSpare();
    return pool;
  }

  /** Workers configured. */
  get size(): number {
    return this.#slots.length;
  }

  /** The pids of the workers serving now, by index (null while one is being replaced). */
  get pids(): (number | null)[] {
    return this.#slots.map((s) => (s.ready && s.child?.pid !== undefined ? s.child.pid : null));
  }

  /**
   * Sends `type` to every worker and resolves when each answered (or went
   * away meanwhile: its replacement starts from the state of now). Rejects
   * with the first error a serving worker answered or a timeout.
   */
  async broadcast(type: string, body: unknown, timeoutMs = 5000): Promise<void> {
    await Promise.all(
      this.#live().map((slot) =>
        (slot.channel as Channel).request(type, body, timeoutMs).catch((err: unknown) => {
          if (slot.child === null || slot.child.exitCode !== null || slot.child.signalCode !== null) return;
          if ((err as { code?: string }).code === 'CLOSED') return;
          throw err;
        }),
      ),
    );
  }

  /** The channel of worker `index` while it is live (started or starting), else null (being replaced). */
  channel(index: number): Channel | null {
    const slot = this.#slots[index];
    return slot !== undefined && slot.channel !== null && slot.child?.connected === true ? slot.channel : null;
  }

  /** Sends `type` one way to every live worker but `except` (the index of the one it came from). */
  notify(type: string, body: unknown, except = -1): void {
    for (const slot of this.#live()) if (slot.index !== except) (slot.channel as Channel).notify(type, body);
  }

  /**
   * Asks every serving worker `type` and resolves with the answers of those
   * that answered within `timeoutMs` (a worker dying meanwhile is left out,
   * so the answer reflects the workers serving at the time).
   */
  async gather<T>(type: string, body: unknown, timeoutMs = 5000): Promise<T[]> {
    const answers = await Promise.allSettled(
      this.#live().map((slot) => (slot.channel as Channel).request<T>(type, body, timeoutMs)),
    );
    const values: T[] = [];
    for (const answer of answers) if (answer.status === 'fulfilled') values.push(answer.value);
    return values;
  }

  /**
   * Drains every worker: each is asked (`cluster.drain` with `graceMs`) to
   * stop accepting and finish what it serves, and exits then; those still
   * running after `killAfterMs` (default `graceMs`) are killed.
   */
  async stop(graceMs = 10_000, killAfterMs = graceMs): Promise<void> {
    this.#stopping = true;
    clearTimeout(this.#spareTimer);
    if (this.#spare !== null) {
      const { child, channel } = this.#spare;
      this.#spare = null;
      channel.close('pool stopped');
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        child.kill('SIGKILL');
        await exited;
      }
    }
    await Promise.all(
      this.#slots.map(async (slot) => {
        clearTimeout(slot.timer);
        const child = slot.child;
        if (child === null || child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
        slot.channel?.request(DRAIN, { graceMs }, killAfterMs).catch(() => {});
        const kill = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
        await exited;
        clearTimeout(kill);
      }),
    );
  }

  #live(): Slot[] {
    return this.#slots.filter((s) => s.channel !== null && s.child?.connected === true);
  }

  #fork(): ChildProcess {
    const options = this.#options;
    return fork(options.entry, options.args ?? [], {
      serialization: 'advanced',
      ...(options.execArgv === undefined ? {} : { execArgv: options.execArgv }),
      ...(options.env === undefined ? {} : { env: options.env }),
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
  }

  /** Starts the spare; a spare that dies is started again after 1 s. */
  #forkSpare(): void {
    if (this.#stopping || this.#spare !== null) return;
    const child = this.#fork();
    const spare = { child, channel: new Channel(child) };
    this.#spare = spare;
    child.on('error', () => {});
    child.once('exit', () => {
      if (this.#spare !== spare) return;
      spare.channel.close('spare exited');
      this.#spare = null;
      if (!this.#stopping) this.#spareTimer = setTimeout(() => this.#forkSpare(), 1000);
    });
  }

  #spawn(slot: Slot, first: boolean): Promise<void> {
    const options = this.#options;
    // A replacement takes the spare when there is one (and a new spare starts).
    const spare = first ? null : this.#spare;
    this.#spare = null;
    const child = spare?.child ?? this.#fork();
    const channel = spare?.channel ?? new Channel(child);
    if (spare !== null) setImmediate(() => this.#forkSpare());
    slot.child = child;
    slot.channel = channel;
    slot.ready = false;
    slot.startedAt = Date.now();
    options.setup?.(channel, slot.index, this);
    child.once('exit', (code, signal) => {
      channel.close(`worker ${slot.index} exited`);
      if (slot.child !== child) return;
      slot.child = null;
      slot.channel = null;
      slot.ready = false;
      if (this.#stopping) return;
      const quick = Date.now() - slot.startedAt < 10_000;
      slot.crashes = quick ? slot.crashes + 1 : 1;
      const delays = options.respawnDelaysMs ?? DEFAULT_DELAYS;
      const delay = delays[Math.min(slot.crashes - 1, delays.length - 1)] ?? 0;
      options.onExit?.(slot.index, child.pid ?? 0, code, signal, delay);
      slot.timer = setTimeout(() => {
        if (!this.#stopping) this.#spawn(slot, false).catch(() => {});
      }, delay);
    });
    child.on('error', () => {
      // Spawn or IPC errors end in 'exit' (or never start it: the init request times out).
    });
    const watch = watchStart(
      child.pid,
      options.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS,
      options.readyCpuMs ?? DEFAULT_READY_CPU_MS,
    );
    const init = Promise.race([
      channel.request(INIT, options.init(slot.index), options.readyLimitMs ?? DEFAULT_READY_LIMIT_MS),
      watch.hung,
    ])
      .finally(watch.stop)
      .then(
        (answer) => {
          if (slot.child !== child) return;
          slot.ready = true;
          options.onReady?.(slot.index, child.pid ?? 0, answer);
        },
        (err: unknown) => {
          const error = err instanceof Error ? err : new Error(String(err));
          if (!first && !this.#stopping) {
            options.onStartFailure?.(slot.index, error);
            child.kill('SIGKILL');
          }
          throw new Error(`worker ${slot.index} did not start: ${error.message}`, { cause: err });
        },
      );
    return init;
  }
}

/**
 * Watches a starting worker's main thread (/proc/<pid>/schedstat) until
 * `stop`: `hung` rejects once for `stallMs` it neither ran nor waited to
 * run (it waits on something that does not come), or once it ran more than
 * `cpuMs` in all (it spins). A starved worker is neither: it runs a little
 * and waits for a CPU the rest of the time, and the start goes on. Checked
 * a few times per `stallMs`, at most every second; a check that comes late
 * (the primary starved too, and the worker maybe waiting on it) counts as
 * two periods at most.
 */
function watchStart(pid: number | undefined, stallMs: number, cpuMs: number) {
  const every = Math.min(1000, Math.max(10, Math.floor(stallMs / 4)));
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<never>((_, reject) => {
    let seen = { cpuMs: 0, waitMs: 0 };
    let stalled = 0;
    let last = performance.now();
    timer = setInterval(() => {
      const now = performance.now();
      const gap = Math.min(now - last, 2 * every);
      last = now;
      const stat = pid === undefined ? null : readSchedStat(pid);
      if (stat !== null && (stat.cpuMs > seen.cpuMs || stat.waitMs > seen.waitMs)) {
        seen = stat;
        stalled = 0;
      } else stalled += gap;
      if (seen.cpuMs > cpuMs)
        reject(new Error(`${INIT}: no answer after ${Math.round(seen.cpuMs)} ms of CPU (more than ${cpuMs})`));
      else if (stalled >= stallMs)
        reject(new Error(`${INIT}: no answer, and neither ran nor waited for a CPU, for ${stallMs} ms`));
    }, every);
    timer.unref();
  });
  return { hung, stop: () => clearInterval(timer) };
}
