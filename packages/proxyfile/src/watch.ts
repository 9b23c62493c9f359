import { createHash } from 'node:crypto';
import { type FSWatcher, readdirSync, readFileSync, watch } from 'node:fs';
import path from 'node:path';
import { parse } from './parse.js';
import type { ProxyfileLogger, ReloadResult } from './reload.js';

/** Quiet time after the last change before a reload starts, in ms (an editor's save is several events). */
export const WATCH_DEBOUNCE_MS = 300;

/** What a Proxyfile reads: the files (main file and imports) and the directories glob imports list. */
export interface ProxyfileInputs {
  files: string[];
  dirs: string[];
}

/**
 * The files a Proxyfile reads — itself and every file it imports — and the
 * directories its glob imports list, as absolute paths. When the text does
 * not parse, what was read before the error (at least the main file).
 */
export function proxyfileInputs(configPath: string): ProxyfileInputs {
  const main = path.resolve(configPath);
  const files = new Set<string>([main]);
  const dirs = new Set<string>();
  try {
    parse(readFileSync(main, 'utf8'), {
      filename: configPath,
      readFile: (file) => {
        files.add(path.resolve(file));
        return readFileSync(file, 'utf8');
      },
      readDir: (dir) => {
        dirs.add(path.resolve(dir));
        return readdirSync(dir);
      },
    });
  } catch {
    // The reload reports the error; watch what could be read.
  }
  return { files: [...files], dirs: [...dirs] };
}

/** A fingerprint of the inputs' contents: a save that changes nothing triggers no reload. */
function fingerprint(inputs: ProxyfileInputs): string {
  const hash = createHash('sha256');
  for (const file of [...inputs.files].sort()) {
    hash.update(`${file}\0`);
    try {
      hash.update(readFileSync(file));
    } catch {
      hash.update('\0missing');
    }
  }
  for (const dir of [...inputs.dirs].sort()) {
    try {
      hash.update(`${dir}\0${readdirSync(dir).sort().join('\0')}`);
    } catch {
      hash.update(`${dir}\0missing`);
    }
  }
  return hash.digest('hex');
}

/** Options of {@link watchProxyfile}. */
export interface WatchOptions {
  /** The Proxyfile path `run` was started with. */
  configPath: string;
  /** The reload SIGHUP runs (`Daemon.reload`). */
  reload: () => Promise<ReloadResult>;
  /** Logger of target `proxy::config`. */
  logger: ProxyfileLogger;
  /** Default {@link WATCH_DEBOUNCE_MS}. */
  debounceMs?: number;
  /** Least time between two reloads, in ms: the daemon gives the admin API's reload cooldown (5 s). */
  cooldownMs: number;
}

/** A running watch; `close()` stops it (a reload in flight finishes). */
export interface ProxyfileWatch {
  close(): void;
  /** Resolves once no reload is pending or running (for tests). */
  idle(): Promise<void>;
}

/**
 * `proxyd run --watch`: watches the Proxyfile and the files it imports (the
 * directories that hold them, so an editor that saves by renaming is seen)
 * and reloads through the same path as SIGHUP. Changes are debounced
 * ({@link WATCH_DEBOUNCE_MS}); two reloads are at least `cooldownMs` apart
 * (the admin API's 5 s cooldown): a change inside the cooldown is queued,
 * never dropped, and the reload after it reads the latest text. A save that
 * leaves every input's content as it was reloads nothing. After each reload
 * the set of watched files follows the imports.
 */
export function watchProxyfile(options: WatchOptions): ProxyfileWatch {
  const { configPath, reload, logger } = options;
  const debounceMs = options.debounceMs ?? WATCH_DEBOUNCE_MS;
  const { cooldownMs } = options;
  let inputs = proxyfileInputs(configPath);
  let seen = fingerprint(inputs);
  let watchers = new Map<string, FSWatcher>();
  let lastChange = 0;
  let lastReload = Number.NEGATIVE_INFINITY;
  let pending = false;
  let running: Promise<void> | null = null;
  let timer: NodeJS.Timeout | null = null;
  let closed = false;
  let idleWaiters: Array<() => void> = [];

  const settle = () => {
    if (pending || running || timer) return;
    for (const resolve of idleWaiters) resolve();
    idleWaiters = [];
  };

  const schedule = () => {
    if (closed || running) return;
    if (timer) clearTimeout(timer);
    const at = Math.max(lastChange + debounceMs, lastReload + cooldownMs);
    timer = setTimeout(fire, Math.max(0, at - Date.now()));
  };

  const fire = () => {
    timer = null;
    if (closed || !pending) return settle();
    pending = false;
    const now = fingerprint(inputs);
    if (now === seen) return settle();
    lastReload = Date.now();
    logger.info({ path: configPath }, 'Proxyfile changed: reloading');
    running = reload()
      .then(() => undefined)
      .finally(() => {
        running = null;
        inputs = proxyfileInputs(configPath);
        seen = fingerprint(inputs);
        follow();
        if (pending) schedule();
        settle();
      });
  };

  const onEvent = (dir: string) => (_event: string, name: string | Buffer | null) => {
    const file = name === null ? null : path.join(dir, name.toString());
    if (file !== null && !inputs.files.includes(file) && !inputs.dirs.includes(dir)) return;
    pending = true;
    lastChange = Date.now();
    schedule();
  };

  /** Watches the directory of every input file and every glob directory, and no other. */
  const follow = () => {
    if (closed) return;
    const wanted = new Set([...inputs.files.map((f) => path.dirname(f)), ...inputs.dirs]);
    const next = new Map<string, FSWatcher>();
    for (const dir of wanted) {
      const current = watchers.get(dir);
      if (current) {
        next.set(dir, current);
        continue;
      }
      try {
        const watcher = watch(dir, { persistent: false }, onEvent(dir));
        watcher.on('error', (err) => logger.warn({ dir, error: err.message }, 'cannot watch directory'));
        next.set(dir, watcher);
      } catch (err) {
        logger.warn({ dir, error: err instanceof Error ? err.message : String(err) }, 'cannot watch directory');
      }
    }
    for (const [dir, watcher] of watchers) if (!next.has(dir)) watcher.close();
    watchers = next;
  };

  follow();
  logger.info({ path: configPath, files: inputs.files.length }, 'watching the Proxyfile for changes');
  return {
    close() {
      closed = true;
      if (timer) clearTimeout(timer);
      timer = null;
      pending = false;
      for (const watcher of watchers.values()) watcher.close();
      watchers.clear();
      settle();
    },
    idle() {
      return new Promise((resolve) => {
        idleWaiters.push(resolve);
        settle();
      });
    },
  };
}
