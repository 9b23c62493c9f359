// What the benchmarks share: a temp dir and the child processes of one run,
// cleaned up however the run ends, free loopback ports, and readings of
// /proc. One copy here instead of one per bench/<name>/run.mjs.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** /proc/<pid>/stat times are in clock ticks (USER_HZ, 100 on Linux). */
export const CLK_TCK = 100;

/**
 * A run: a temp dir (`proxyd-bench-<name>-…`), the children it starts, and
 * `shutdown(code)`: SIGTERM to every child, up to 5 s for them to exit
 * (proxyd writes a --cpu-prof profile on the way out), then SIGKILL; the
 * dir goes only after they are gone (a child still writing into it would
 * make the removal fail half-way), then the process exits with `code`.
 * SIGINT (130), SIGTERM (143), an uncaught error (1) and an unplanned exit
 * (kill, then remove what can be removed) all end there.
 */
export function benchSession(name) {
  const dir = mkdtempSync(path.join(tmpdir(), `proxyd-bench-${name}-`));
  const children = [];
  let stopping = false;

  async function shutdown(code) {
    if (stopping) return;
    stopping = true;
    const alive = children.filter((c) => c.exitCode === null && c.signalCode === null);
    const gone = Promise.all(alive.map((c) => new Promise((resolve) => c.once('exit', resolve))));
    for (const c of alive) c.kill('SIGTERM');
    const timer = setTimeout(() => {
      for (const c of alive) c.kill('SIGKILL');
    }, 5000);
    await gone;
    clearTimeout(timer);
    rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
    process.exit(code);
  }
  process.on('exit', () => {
    stopping = true;
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
    } catch {}
  });
  process.on('SIGINT', () => shutdown(130));
  process.on('SIGTERM', () => shutdown(143));
  process.on('uncaughtException', (err) => {
    console.error(err);
    shutdown(1);
  });
  process.on('unhandledRejection', (err) => {
    console.error(err);
    shutdown(1);
  });

  return {
    dir,
    children,
    shutdown,
    /** Whether the run is ending (a child's exit is then expected). */
    get stopping() {
      return stopping;
    },
    /** A free loopback port, never one handed out before in this run. */
    freePort,
    /** Spawns a child of the run; its last 20 KB of output is `child.output()`, printed if it exits early. */
    start(label, cmd, args, env = {}) {
      const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      const keep = (d) => {
        out = (out + d).slice(-20_000);
      };
      child.stdout.on('data', keep);
      child.stderr.on('data', keep);
      child.on('exit', (code) => {
        if (!stopping) console.error(`${label} exited early (${code}):\n${out.slice(-2000)}`);
      });
      child.output = () => out;
      children.push(child);
      return child;
    },
  };
}

/** Peak RSS (VmHWM) of a process, MB; NaN once it is gone. */
export function peakRssMb(pid) {
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('VmHWM:'));
    return Number(line?.split(/\s+/)[1] ?? 0) / 1024;
  } catch {
    return Number.NaN;
  }
}

/** CPU seconds (user + system) of a process; with `children`, of its waited-for children; NaN once it is gone. */
export function cpuSeconds(pid, children = false) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return children ? (Number(f[13]) + Number(f[14])) / CLK_TCK : (Number(f[11]) + Number(f[12])) / CLK_TCK;
  } catch {
    return Number.NaN;
  }
}

/**
 * Seconds each thread of `pid` has waited on a run queue so far (runnable but not running: the second field of
 * /proc/<pid>/task/<tid>/schedstat, in ns), by thread id; empty once it is gone. A proxy that used little of
 * its core while a thread of it waited most of the round was starved by other processes on that core, not
 * waiting on itself (a `nice -n 19` proxy beside one busy nice-0 process gets 15/1039 of the core).
 */
export function runQueueSeconds(pid) {
  const out = new Map();
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        out.set(tid, Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[1]) / 1e9);
      } catch {}
    }
  } catch {}
  return out;
}

/** The longest a thread waited on a run queue between two {@link runQueueSeconds} readings, in seconds. */
export function longestWait(before, after) {
  let most = 0;
  for (const [tid, s] of after) most = Math.max(most, s - (before.get(tid) ?? 0));
  return most;
}

/** `pid` and its live descendants (by the parent pid in /proc/<pid>/stat), `pid` first. */
export function treePids(pid) {
  const byParent = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (f[0] === 'Z') continue;
      const list = byParent.get(Number(f[1])) ?? [];
      list.push(Number(entry));
      byParent.set(Number(f[1]), list);
    } catch {}
  }
  const out = [];
  const stack = [pid];
  while (stack.length > 0) {
    const p = stack.pop();
    out.push(p);
    stack.push(...(byParent.get(p) ?? []));
  }
  return out;
}

/** CPU seconds (user + system) of `pids` summed; a process gone meanwhile counts 0. */
export function cpuSecondsOf(pids) {
  let total = 0;
  for (const pid of pids) {
    const s = cpuSeconds(pid);
    if (!Number.isNaN(s)) total += s;
  }
  return total;
}

/** A wrk latency (`812.00us`, `1.20ms`, `2.01s`) in ms. */
export function toMs(v) {
  const m = /^([\d.]+)(us|ms|s)$/.exec(v);
  if (!m) return Number.NaN;
  const n = Number(m[1]);
  return m[2] === 'us' ? n / 1000 : m[2] === 's' ? n * 1000 : n;
}

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};

/** Ports handed out by {@link freePort} in this process: the kernel may give a closed one back at once. */
const handedOut = new Set();

/** A TCP port free on 127.0.0.1 right now (listen on 0, read it, release it), never one handed out before. */
export async function freePort() {
  for (;;) {
    const port = await new Promise((resolve, reject) => {
      const s = net.createServer();
      s.once('error', reject);
      s.listen(0, '127.0.0.1', () => {
        const { port } = s.address();
        s.close(() => resolve(port));
      });
    });
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
}
