import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { readSchedStat } from './sched-stat.js';

describe('readSchedStat', () => {
  it("reads a process's time on a CPU, which grows while it computes", async () => {
    const child = spawn(process.execPath, ['-e', 'for (;;);'], { stdio: 'ignore' });
    try {
      const pid = child.pid as number;
      const before = readSchedStat(pid);
      expect(before).not.toBeNull();
      // 50 ms of CPU, however long the machine takes to give it.
      while ((readSchedStat(pid)?.cpuMs ?? 0) < (before?.cpuMs ?? 0) + 50) await new Promise((r) => setTimeout(r, 10));
      expect(readSchedStat(pid)?.waitMs).toBeGreaterThanOrEqual(before?.waitMs ?? 0);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('is null for a process that does not exist', () => {
    expect(readSchedStat(2 ** 22 + 1)).toBeNull();
  });
});
