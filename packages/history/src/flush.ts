import path from 'node:path';
import type { MinuteRollup } from '@proxyd/analytics';
import { type Config, defaultHistoryOptions } from '@proxyd/model';
import { FleetHistory, type FleetRollups } from './fleet.js';
import { type HistoryLog, openHistory } from './open.js';
import type { HistoryStore } from './store.js';

/** What the flush schedule logs to (a pino logger of target `proxy::history` fits). */
export interface HistoryFlushLog extends HistoryLog {
  warn(fields: Record<string, unknown>, message: string): void;
  debug(fields: Record<string, unknown>, message: string): void;
}

/** The log target of history (the database set aside, flushes that fail or take long). */
export const HISTORY_TARGET = 'proxy::history';
/** The database file in the state dir. */
export const HISTORY_FILE = 'history.db';
/**
 * Test hook: flush every this many ms instead of once a minute (a whole
 * number ≥ 10). The minutes stay minutes: a flush writes the minutes that
 * are complete, so a test still waits for a minute to end.
 */
export const FLUSH_ENV = 'PROXYD_HISTORY_FLUSH_MS';
/** A flush runs this long after each minute ends: the workers' last records of the minute are counted by then. */
const FLUSH_DELAY_MS = 2_000;
/** Rollups kept for a retry when writes fail, at most (then the oldest are dropped, with an error). */
const MAX_PENDING = 100_000;
/** The fleet's batches are read again this long after each flush: a node that flushed a little later is counted then. */
const FLEET_REGATHER_MS = 15_000;
/** At a stop, how long the last exchange with the fleet may take, ms. */
const FINAL_SYNC_MS = 2_000;
/** A write that holds the thread longer than this is logged at WARN. */
const SLOW_WRITE_MS = 100;

/** Where the rollups come from and the salt goes: this process's analytics, or the workers over IPC. */
export interface RollupSource {
  /** Every complete minute's rollups (minute start + 60 s ≤ `now`), forgotten by the collectors. */
  drain(now: number): MinuteRollup[] | Promise<MinuteRollup[]>;
  /** Gives every collector the day's visitor salt. */
  setSalt(salt: Buffer): void | Promise<void>;
}

/** History as the daemon runs it: the store, read in-process, and its flush timer. */
export interface HistoryWiring {
  readonly store: HistoryStore;
  /** The UTC day's visitor salt now (a new worker's init). */
  visitorSalt(): Buffer;
  /** Rollups that arrived outside a flush (a worker's last, as it drains): written with the next one. */
  accept(rollups: readonly MinuteRollup[]): void;
  /** Drains the complete minutes and writes them now. */
  flush(): Promise<void>;
  /** Stops the timers, drains every minute (the current one too), writes it and closes the database. */
  close(): Promise<void>;
}

/** Reads {@link FLUSH_ENV}. */
export function flushPeriodFromEnv(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const raw = env[FLUSH_ENV];
  if (raw === undefined || !/^\d+$/.test(raw)) return undefined;
  const ms = Number(raw);
  return ms >= 10 ? ms : undefined;
}

/**
 * Opens `<stateDir>/history.db` (unless the Proxyfile says `history off`, or
 * no database can be opened there at all, logged: null) and starts flushing: a minute after the last, plus 2 s, the
 * complete minutes are drained from `source` (merged per domain and minute
 * by the store) and written in one transaction on this thread — the control
 * plane's, so with workers no write runs where traffic is served. The
 * day's visitor salt goes to `source` before the first flush and at each
 * UTC midnight. A failed write keeps its rollups for the next flush.
 */
export async function startHistory(
  config: Config,
  options: {
    stateDir: string;
    logger: HistoryFlushLog;
    now?: () => number;
    /** `storage redis`: the fleet's exchange and this node's name; each node's rollups reach every node's history. */
    fleet?: { exchange: FleetRollups; node: string };
  },
): Promise<(HistoryWiring & { attach(source: RollupSource): Promise<void> }) | null> {
  const settings = config.global.history ?? defaultHistoryOptions();
  if (!settings.enabled) return null;
  const now = options.now ?? Date.now;
  const { logger } = options;
  let store: HistoryStore;
  try {
    store = await openHistory({
      file: path.join(options.stateDir, HISTORY_FILE),
      retention: {
        minute: settings.minute_retention_ms,
        hour: settings.hour_retention_ms,
        day: settings.day_retention_ms,
      },
      maxBytes: settings.max_size_bytes,
      log: logger,
      now,
    });
  } catch (err) {
    // Not even a new file could be made (the state dir is read-only, the disk full): proxyd still serves.
    logger.error(
      { error: (err as Error).message },
      'history is off: its database cannot be opened (GET /stats answers 501)',
    );
    return null;
  }
  const fleet =
    options.fleet === undefined
      ? null
      : new FleetHistory(store, options.fleet.exchange, { node: options.fleet.node, log: logger });
  let source: RollupSource | null = null;
  let pending: MinuteRollup[] = [];
  let flushTimer: NodeJS.Timeout | undefined;
  let regatherTimer: NodeJS.Timeout | undefined;
  let dayTimer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  let closed = false;
  const period = flushPeriodFromEnv();

  const write = (rollups: MinuteRollup[], at: number) => {
    const all = pending.length === 0 ? rollups : pending.concat(rollups);
    pending = [];
    const batch = fleet?.batch(all, at) ?? null;
    try {
      const result = store.write(all, at, batch === null ? [] : [batch.id]);
      if (batch !== null) fleet?.written(batch);
      const fields = { rollups: result.rollups, ms: Math.round(result.ms * 10) / 10, size_bytes: store.sizeBytes() };
      if (result.trimmed)
        logger.warn(
          { ...fields, deleted: result.deleted },
          'history over 90 % of max_size: the oldest data was trimmed',
        );
      else if (result.ms > SLOW_WRITE_MS) logger.warn(fields, `history write took ${fields.ms} ms`);
      else logger.debug(fields, 'history written');
    } catch (err) {
      pending = all.length > MAX_PENDING ? all.slice(all.length - MAX_PENDING) : all;
      logger.error(
        { error: (err as Error).message, kept: pending.length },
        'history write failed: the rollups are kept for the next flush',
      );
    }
  };

  const flushOnce = async (drainAt: number, final = false) => {
    if (source === null) return;
    let rollups: MinuteRollup[] = [];
    try {
      rollups = await source.drain(drainAt);
    } catch (err) {
      logger.error({ error: (err as Error).message }, 'history: the rollups could not be gathered');
    }
    write(rollups, now());
    // At a stop, Redis gets a moment to take the last minutes: a stop never waits for an absent Redis.
    if (final) await Promise.race([syncFleet(), new Promise((resolve) => setTimeout(resolve, FINAL_SYNC_MS).unref())]);
    else await syncFleet();
  };
  /** Publishes this node's waiting batches, writes the others' and checks the day's salt; Redis away: next time. */
  const syncFleet = async () => {
    if (fleet === null) return;
    const at = now();
    try {
      await fleet.publish(at);
      await fleet.gather(at);
      if (!fleet.saltKnown(at)) await giveSalt(await fleet.salt(at));
    } catch (err) {
      logger.warn(
        { error: (err as Error).message, waiting: fleet.waiting },
        'history: the fleet’s rollups could not be exchanged (storage redis); this node’s history goes on, the rest follows when Redis answers',
      );
    }
  };
  let givenSalt: Buffer | null = null;
  const giveSalt = async (salt: Buffer) => {
    if (source === null || givenSalt?.equals(salt)) return;
    await source.setSalt(salt);
    givenSalt = salt;
  };
  const flush = () => {
    running = running.then(() => flushOnce(now()));
    return running;
  };

  const scheduleFlush = () => {
    if (closed) return;
    const t = now();
    const wait = period ?? 60_000 - (t % 60_000) + FLUSH_DELAY_MS;
    flushTimer = setTimeout(() => {
      void flush().finally(scheduleFlush);
      if (fleet !== null && period === undefined) {
        regatherTimer = setTimeout(() => {
          running = running.then(syncFleet);
        }, FLEET_REGATHER_MS);
        regatherTimer.unref();
      }
    }, wait);
    flushTimer.unref();
  };

  const rotateSalt = async () => {
    if (source === null) return;
    try {
      let salt = store.visitorSalt(now());
      if (fleet !== null) salt = await fleet.salt(now()).catch(() => salt);
      await giveSalt(salt);
    } catch (err) {
      logger.error({ error: (err as Error).message }, 'history: the visitor salt could not be given to every process');
    }
  };
  const scheduleSalt = () => {
    if (closed) return;
    const t = now();
    dayTimer = setTimeout(
      () => {
        void rotateSalt().finally(scheduleSalt);
      },
      86_400_000 - (t % 86_400_000),
    );
    dayTimer.unref();
  };

  return {
    store,
    async attach(from) {
      source = from;
      await rotateSalt();
      scheduleFlush();
      scheduleSalt();
    },
    visitorSalt: () => store.visitorSalt(now()),
    accept(rollups) {
      pending.push(...rollups);
    },
    flush,
    async close() {
      if (closed) return;
      closed = true;
      clearTimeout(flushTimer);
      clearTimeout(regatherTimer);
      clearTimeout(dayTimer);
      await running;
      // Every minute, the current one too: a restart loses nothing.
      await flushOnce(Number.MAX_SAFE_INTEGER, true);
      store.close();
    },
  };
}
