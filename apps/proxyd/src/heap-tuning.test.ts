import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import {
  mallocEnv,
  primaryReexecArgs,
  releaseStartupMemory,
  tuneHeapForStreaming,
  workerExecArgv,
} from './heap-tuning.js';

/**
 * A child process allocates 500 MB of short-lived 64 KiB Buffers (as socket
 * reads of a streamed body do) and counts the collections during it.
 */
function collections(tune: boolean): { major: number; minor: number } {
  const script = `
    import { PerformanceObserver, constants } from 'node:perf_hooks';
    import { tuneHeapForStreaming } from ${JSON.stringify(new URL('./heap-tuning.ts', import.meta.url).href)};
    ${tune ? "tuneHeapForStreaming([], '');" : ''}
    globalThis.gc();
    let major = 0, minor = 0;
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) {
        if (e.detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR) major++;
        else if (e.detail.kind === constants.NODE_PERFORMANCE_GC_MINOR) minor++;
      }
    }).observe({ entryTypes: ['gc'] });
    for (let i = 0; i < 8000; i++) {
      Buffer.allocUnsafeSlow(64 * 1024)[0] = i;
      if (i % 50 === 0) await new Promise((r) => setImmediate(r));
    }
    await new Promise((r) => setTimeout(r, 50));
    process.stdout.write(JSON.stringify({ major, minor }));
  `;
  const out = execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], {
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  return JSON.parse(out) as { major: number; minor: number };
}

describe('heap tuning for streamed bodies (issue 14: Node 24 reclaimed socket Buffers with major GCs)', () => {
  it('short-lived Buffers are reclaimed by scavenges (on Node 24 without it, by mark-compacts only)', () => {
    const untuned = collections(false);
    const tuned = collections(true);
    expect(tuned.minor).toBeGreaterThan(untuned.minor);
    expect(tuned.minor).toBeGreaterThanOrEqual(5);
  });

  it("leaves an operator's own choice alone", () => {
    expect(tuneHeapForStreaming(['--scavenger-max-new-space-capacity-mb=16'], '')).toBe(false);
    expect(tuneHeapForStreaming([], '--scavenger_max_new_space_capacity_mb=4')).toBe(false);
  });
});

/** The young generation's size (MB) of a child started with `args`, after 200 MB of short-lived objects. */
function newSpaceMb(args: readonly string[], release = false): number {
  const script = `
    import v8 from 'node:v8';
    import { releaseStartupMemory } from ${JSON.stringify(new URL('./heap-tuning.ts', import.meta.url).href)};
    const keep = [];
    for (let i = 0; i < 2e6; i++) { const o = { a: i, b: 'x' + i }; if (i % 1000 === 0) keep.push(o); }
    ${release ? 'releaseStartupMemory();' : ''}
    const space = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
    process.stdout.write(String(space.space_size / 1048576));
  `;
  const out = execFileSync(process.execPath, [...args, '--input-type=module', '-e', script], {
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  return Number(out);
}

describe('the young generation of a worker (issue 32: memory after load)', () => {
  it('a worker is forked with a capped young generation: 4 MB where Node 24 grows it to 16', () => {
    const args = workerExecArgv([], '');
    expect(newSpaceMb(args)).toBeLessThanOrEqual(4);
    expect(newSpaceMb([])).toBeGreaterThan(8);
  });

  it("keeps this process's flags and leaves an operator's own size alone", () => {
    expect(workerExecArgv(['--enable-source-maps'], '')).toEqual(['--enable-source-maps', '--max-semi-space-size=2']);
    expect(workerExecArgv(['--max-semi-space-size=8'], '')).toEqual(['--max-semi-space-size=8']);
    expect(workerExecArgv([], '--max_semi_space_size=4')).toEqual([]);
  });
});

describe("glibc's malloc thresholds (issue 32: a worker's memory after load)", () => {
  it('starts a process of the daemon with the trim threshold fixed at 128 KB', () => {
    expect(mallocEnv({ PATH: '/usr/bin' })).toEqual({ PATH: '/usr/bin', MALLOC_TRIM_THRESHOLD_: '131072' });
  });
  it("leaves an operator's own malloc settings alone", () => {
    for (const env of [
      { MALLOC_ARENA_MAX: '2' },
      { MALLOC_MMAP_THRESHOLD_: '65536' },
      { GLIBC_TUNABLES: 'glibc.malloc.trim_threshold=0' },
    ]) {
      expect(mallocEnv(env)).toEqual(env);
    }
  });
});

describe('what starting took goes back (issue 32: an idle primary kept a 32 MB young generation)', () => {
  it('after releaseStartupMemory the young generation is back to its smallest', () => {
    expect(newSpaceMb([])).toBeGreaterThan(8);
    expect(newSpaceMb([], true)).toBeLessThanOrEqual(2);
  });

  it('can run more than once in one process', () => {
    releaseStartupMemory();
    releaseStartupMemory();
  });
});

describe('the young generation of the primary (issue 30: 100,000 names certified)', () => {
  const argv = ['/usr/bin/node', '/opt/proxyd/dist/main.js'];

  it('`proxyd run` re-executes with the cap, its flags and arguments kept in order', () => {
    expect(primaryReexecArgs([...argv, 'run', '--config', 'Proxyfile'], ['--enable-source-maps'], '')).toEqual([
      '--enable-source-maps',
      '--max-semi-space-size=2',
      '/opt/proxyd/dist/main.js',
      'run',
      '--config',
      'Proxyfile',
    ]);
  });

  it('leaves other commands, an operator’s own size and a single executable alone', () => {
    expect(primaryReexecArgs([...argv, 'routes', 'list'], [], '')).toBeNull();
    expect(primaryReexecArgs([...argv, 'run'], ['--max-semi-space-size=8'], '')).toBeNull();
    expect(primaryReexecArgs([...argv, 'run'], [], '--max_semi_space_size=4')).toBeNull();
    expect(primaryReexecArgs([...argv, 'run'], [], '', true)).toBeNull();
    // After the re-execution the flag is in execArgv: never a second time.
    expect(primaryReexecArgs([...argv, 'run'], ['--max-semi-space-size=2'], '')).toBeNull();
  });
});
