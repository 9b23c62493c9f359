import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { tuneHeapForStreaming } from './heap-tuning.js';

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
