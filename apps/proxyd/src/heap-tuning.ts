import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';

/** The V8 flag the tuning sets, and the value it restores (V8 13.0's default, MB). */
const FLAG = 'scavenger-max-new-space-capacity-mb';
const VALUE = 8;

/**
 * Keeps short-lived Buffers in the young generation's cheap collections on
 * Node 24.
 *
 * V8 13.6 (Node 24.0) raised the young generation's maximum from 8 to
 * 32 MB, and with it the point where young ArrayBuffer memory triggers a
 * scavenge (from 32 to 128 MB), above the 64 MB external-memory limit that
 * starts a mark-compact. A proxy streaming bodies allocates a Buffer per
 * socket read, so Node 24 reclaimed them with major GCs: in bench/proxy a
 * plain node:http proxy of 100 KB bodies used 1.4-1.6x the CPU per request
 * of Node 20 (nodejs/node#61967, #63863). Setting the old maximum restores
 * Node 20's figures; V8 reads the flag when it sizes the trigger, so setting
 * it at start, before any traffic, takes effect.
 *
 * Does nothing when the operator chose a value (`node --scavenger-max-…` or
 * `NODE_OPTIONS`). Returns whether it set the flag. Remove once a Node 24
 * release carries V8's own fix (external memory accounted in the global
 * limit).
 */
export function tuneHeapForStreaming(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions: string = process.env.NODE_OPTIONS ?? '',
): boolean {
  const chosen = (arg: string) => arg.replaceAll('_', '-').includes(FLAG);
  if (execArgv.some(chosen) || chosen(nodeOptions)) return false;
  v8.setFlagsFromString(`--${FLAG}=${VALUE}`);
  return true;
}

/** The young generation's semi-space cap a forked worker gets, MB (Node 24's default grows to 16). */
const WORKER_SEMI_SPACE_MB = 2;

/**
 * The Node flags a data-plane worker is forked with: this process's, plus
 * `--max-semi-space-size=2` unless the operator chose a size (in
 * `execArgv` or `NODE_OPTIONS`). V8 sizes the young generation when the
 * process starts, so the flag must be on the command line (setting it at
 * run time changes nothing). Under load a worker's young generation grew
 * to 2 × 16 MB and stayed there; capped, a worker held ~30 MB PSS less
 * after 10 s of wrk (bench/memory, issue 32), at a CPU cost per request
 * within that bench's noise. 1 MB read the same memory with twice the
 * scavenges.
 */
export function workerExecArgv(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions: string = process.env.NODE_OPTIONS ?? '',
): string[] {
  const chosen = (arg: string) => arg.replaceAll('_', '-').includes('max-semi-space-size');
  if (execArgv.some(chosen) || chosen(nodeOptions)) return [...execArgv];
  return [...execArgv, `--max-semi-space-size=${WORKER_SEMI_SPACE_MB}`];
}

/**
 * The same cap for a worker of the single executable, as `NODE_OPTIONS`:
 * the executable reads every command-line argument as its own (a forked
 * worker given `--max-semi-space-size=2` exits with "unknown option"),
 * while Node still reads `NODE_OPTIONS`, which allows this flag.
 */
export function workerNodeOptions(nodeOptions: string = process.env.NODE_OPTIONS ?? ''): string {
  if (nodeOptions.replaceAll('_', '-').includes('max-semi-space-size')) return nodeOptions;
  return `${nodeOptions} --max-semi-space-size=${WORKER_SEMI_SPACE_MB}`.trim();
}

/** glibc's malloc trim threshold the daemon's processes start with, bytes (its initial value). */
const MALLOC_TRIM_THRESHOLD = 131072;

/**
 * The environment a process of the daemon is started with (the re-executed
 * primary, each forked worker): `env` plus `MALLOC_TRIM_THRESHOLD_=131072`
 * unless the operator set a malloc variable (`MALLOC_…` or
 * `GLIBC_TUNABLES` with `glibc.malloc.`).
 *
 * glibc raises its mmap and trim thresholds each time a large block
 * allocated with mmap is freed (up to 32 MB), so the socket and parser
 * memory of a burst of traffic stays in the heap after it is freed. Set
 * explicitly, the thresholds stay at 128 KB and free memory at the top of
 * the heap goes back to the system. After 10 s of wrk a worker held
 * ~5 MB PSS less, at the same CPU per request (bench/memory, issue 32).
 * glibc reads the variable when the process starts; other C libraries
 * ignore it.
 */
export function mallocEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const chosen =
    Object.keys(env).some((name) => name.startsWith('MALLOC_')) || (env.GLIBC_TUNABLES ?? '').includes('glibc.malloc.');
  if (chosen) return env;
  return { ...env, MALLOC_TRIM_THRESHOLD_: String(MALLOC_TRIM_THRESHOLD) };
}

/**
 * Gives back what starting took: one full collection that also shrinks the
 * young generation (V8's "last resort" collection, the one it runs before
 * giving up on memory). Loading the control plane's modules grows the young
 * generation to 2 × 16 MB on Node 24, and a process that then serves no
 * traffic (the primary of workers) never collects it again: this released
 * ~25 MB PSS of an idle primary (bench/memory, issue 32). One call at start,
 * ~50 ms of one core; a process that then serves traffic grows it back as
 * it needs.
 *
 * Node has no API for it: `--expose-gc` set at run time gives new
 * contexts a `gc` function, and V8's `gc()` takes the collection's flavor.
 */
export function releaseStartupMemory(): void {
  v8.setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as (options: { type: string; execution: string; flavor: string }) => void;
  gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}

/**
 * The arguments `proxyd run` re-executes itself with so that the primary's
 * young generation is capped like a worker's (`--max-semi-space-size=2`),
 * or null when nothing is to be done: not the daemon (`run` not among the
 * arguments), the operator chose a size (`execArgv` or `NODE_OPTIONS`), or
 * a single executable (it reads every argument as its own).
 *
 * Issue 30: while 100,000 names were certified the primary's young
 * generation grew to 2 × 16 MB and more and stayed there (the primary at
 * 356 MB PSS after 60 s of issuance, 246 MB with the cap; bench/names
 * start.mjs). V8 sizes it when the process starts, so the flag must be on
 * the command line: setting it at run time changes nothing.
 */
export function primaryReexecArgs(
  argv: readonly string[] = process.argv,
  execArgv: readonly string[] = process.execArgv,
  nodeOptions: string = process.env.NODE_OPTIONS ?? '',
  singleExecutable = false,
): string[] | null {
  if (singleExecutable || !argv.slice(2).includes('run')) return null;
  const chosen = (arg: string) => arg.replaceAll('_', '-').includes('max-semi-space-size');
  if (execArgv.some(chosen) || chosen(nodeOptions)) return null;
  return [...execArgv, `--max-semi-space-size=${WORKER_SEMI_SPACE_MB}`, ...argv.slice(1)];
}
