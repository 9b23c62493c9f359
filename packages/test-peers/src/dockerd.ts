import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { BUSYBOX_IMAGE, importBusyboxImage } from './busybox-image.js';
import { type ContainerRuntime, containerHelpers } from './container-runtime.js';
import { engineApi, waitForPing } from './engine-api.js';
import { armReaper, isRunning, PROCESS_FUNCTIONS, removeDirScript, shellQuote } from './reaper.js';

/** Options of {@link startDockerd}. */
export interface DockerdOptions {
  /**
   * Give the instance its own bridge (default true; the default network is
   * `bridge`). When false, dockerd runs with `--bridge=none`: only `host`,
   * `none` and created networks work.
   */
  bridge?: boolean;
  /**
   * `--live-restore` (default true): containers keep running while dockerd is
   * killed or restarted, as they do under podman. When false, dockerd stops
   * them when it shuts down.
   */
  liveRestore?: boolean;
  /** How long dockerd may take to answer `/_ping`, ms (default 30 000). */
  startTimeoutMs?: number;
}

/** `a.b.c.d/len` → [address as a number, prefix length]. */
function parseCidr(cidr: string): [number, number] {
  const [ip = '', len = '32'] = cidr.split('/');
  const n = ip.split('.').reduce((acc, octet) => acc * 256 + Number(octet), 0);
  return [n, Number(len)];
}

/** A /24 in 172.29.0.0/16 that no address or route of the host overlaps, e.g. `172.29.7`. */
function freeSubnet(): string {
  const used = [
    ...(
      JSON.parse(execFileSync('ip', ['-j', '-4', 'route', 'show', 'table', 'all'], { encoding: 'utf8' })) as {
        dst: string;
      }[]
    ).map((r) => r.dst),
    ...(
      JSON.parse(execFileSync('ip', ['-j', '-4', 'addr'], { encoding: 'utf8' })) as {
        addr_info: { local: string; prefixlen: number }[];
      }[]
    ).flatMap((i) => i.addr_info.map((a) => `${a.local}/${a.prefixlen}`)),
  ]
    .filter((dst) => /^\d+\.\d+\.\d+\.\d+(\/\d+)?$/.test(dst))
    .map(parseCidr);
  for (let tries = 0; tries < 256; tries++) {
    const third = randomBytes(1)[0] ?? 0;
    const [net] = parseCidr(`172.29.${third}.0/24`);
    const overlaps = used.some(([n, len]) => {
      const shorter = Math.min(len, 24);
      const mask = shorter === 0 ? 0 : (0xffffffff << (32 - shorter)) >>> 0;
      return (n & mask) >>> 0 === (net & mask) >>> 0;
    });
    if (!overlaps) return `172.29.${third}`;
  }
  throw new Error('no free /24 in 172.29.0.0/16 for a dockerd bridge');
}

/**
 * A Docker Engine (Debian's `docker.io`, which starts its own containerd)
 * started by hand on its own unix socket, with its own data and exec roots in
 * a temp dir, its own bridge, no iptables changes, and the local busybox
 * image. A detached reaper cleans up if this process dies first.
 */
export async function startDockerd(options: DockerdOptions = {}): Promise<ContainerRuntime> {
  const dir = mkdtempSync(path.join(tmpdir(), 'proxyd-dockerd-'));
  const socketPath = path.join(dir, 'docker.sock');
  const logFile = path.join(dir, 'dockerd.log');
  const pidFile = path.join(dir, 'dockerd.pid');
  const tag = randomBytes(4).toString('hex');
  const containerdPidFile = path.join(dir, 'exec', 'containerd', 'containerd.pid');
  // The default `docker0` would be shared by every dockerd on the host: one bridge per instance.
  const bridge = options.bridge === false ? undefined : `pxd${tag}`;
  writeFileSync(path.join(dir, 'daemon.json'), '{}\n');
  const args = [
    ...['-H', `unix://${socketPath}`, '--data-root', path.join(dir, 'root'), '--exec-root', path.join(dir, 'exec')],
    ...['--pidfile', pidFile, '--config-file', path.join(dir, 'daemon.json')],
    ...['--containerd-namespace', `proxyd-${tag}`, '--containerd-plugins-namespace', `proxyd-${tag}-plugins`],
    `--bridge=${bridge ?? 'none'}`,
    // Host → container needs neither NAT nor forwarding; leave the host's firewall and sysctls alone.
    ...['--iptables=false', '--ip-masq=false', '--ip-forward=false'],
    ...(options.liveRestore === false ? [] : ['--live-restore']),
  ];
  const docker = `docker -H ${shellQuote(`unix://${socketPath}`)}`;
  const reaper = armReaper(
    [
      PROCESS_FUNCTIONS,
      `alive() { ${docker} ps -q >/dev/null 2>&1; }`,
      `dead_containerd() { running "$(cat ${shellQuote(containerdPidFile)} 2>/dev/null)" || rm -f ${shellQuote(containerdPidFile)}; }`,
      // Killed and not restarted: its containers still run, so start it to remove them.
      `if ! alive && [ -d ${shellQuote(path.join(dir, 'root'))} ]; then`,
      `  rm -f ${shellQuote(pidFile)}; dead_containerd`,
      `  dockerd ${args.map(shellQuote).join(' ')} >>${shellQuote(logFile)} 2>&1 &`,
      '  for _ in $(seq 100); do alive && break; sleep 0.1; done',
      'fi',
      `ids=$(${docker} ps -aq 2>/dev/null); [ -n "$ids" ] && ${docker} rm -f $ids >/dev/null 2>&1`,
      `${docker} network prune -f >/dev/null 2>&1`,
      `stop_pid "$(cat ${shellQuote(pidFile)} 2>/dev/null)"`,
      `stop_pid "$(cat ${shellQuote(containerdPidFile)} 2>/dev/null)"`,
      // Whatever still runs in this instance's containerd namespace (dockerd did not come back): its shims and their containers.
      'for p in /proc/[0-9]*; do',
      '  case "$(readlink "$p/exe" 2>/dev/null)" in */containerd-shim*) ;; *) continue ;; esac',
      `  tr '\\0' '\\n' <"$p/cmdline" 2>/dev/null | grep -qx 'proxyd-${tag}' || continue`,
      '  for c in $(cat "$p"/task/*/children 2>/dev/null); do kill -9 "$c" 2>/dev/null; done; kill -9 "$(basename "$p")" 2>/dev/null',
      'done',
      ...(bridge ? [`ip link del ${bridge} 2>/dev/null`] : []),
      removeDirScript(dir),
    ].join('\n'),
  );

  const api = engineApi(socketPath);
  const containerdPid = () => {
    try {
      return Number(readFileSync(containerdPidFile, 'utf8').trim()) || undefined;
    } catch {
      return undefined;
    }
  };
  let daemon: ChildProcess | undefined;
  const log = () => {
    try {
      return readFileSync(logFile, 'utf8').slice(-4000);
    } catch {
      return '';
    }
  };
  const startDaemon = async () => {
    rmSync(socketPath, { force: true });
    rmSync(pidFile, { force: true });
    // dockerd reuses the containerd of its pid file while `kill -0` succeeds, a zombie's too, and then waits for it forever.
    const containerd = containerdPid();
    if (containerd !== undefined && !isRunning(containerd)) rmSync(containerdPidFile, { force: true });
    const out = openSync(logFile, 'a');
    const child = spawn('dockerd', args, { stdio: ['ignore', out, out] });
    closeSync(out);
    const failed = new Promise<Error>((resolve) => child.once('error', resolve));
    const exited = new Promise<string>((resolve) => child.once('exit', (code) => resolve(`exited with ${code}`)));
    child.unref();
    daemon = child;
    const up = await Promise.race([waitForPing(api, options.startTimeoutMs ?? 30_000), failed, exited]);
    if (up !== true) {
      const why = up instanceof Error ? `${up.message} (scripts/ensure-test-deps.sh installs docker.io)` : up;
      throw new Error(`dockerd did not come up: ${why || 'timed out'}\n${log()}`);
    }
  };
  const stopDaemon = async (signal: NodeJS.Signals) => {
    const child = daemon;
    if (!child) return;
    if (child.exitCode === null && child.signalCode === null) {
      child.ref(); // awaited below: keep Node up until it is gone
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill(signal);
      await exited;
    }
    daemon = undefined;
    // Its containerd dies with it (parent-death signal); wait, so a restart starts a fresh one.
    const containerd = containerdPid();
    for (let i = 0; containerd !== undefined && isRunning(containerd) && i < 100; i++) await delay(50);
  };

  const { dispose, ...helpers } = containerHelpers(api);
  let stopped: Promise<void> | undefined;
  const stop = () => {
    stopped ??= (async () => {
      dispose();
      daemon = undefined;
      await reaper.run();
    })();
    return stopped;
  };

  try {
    if (bridge) {
      const subnet = freeSubnet();
      execFileSync('ip', ['link', 'add', 'name', bridge, 'type', 'bridge']);
      execFileSync('ip', ['addr', 'add', `${subnet}.1/24`, 'dev', bridge]);
      execFileSync('ip', ['link', 'set', bridge, 'up']);
    }
    await startDaemon();
    await importBusyboxImage(api, path.join(dir, 'rootfs'));
  } catch (err) {
    const message = (err as Error).message;
    await stop();
    throw new Error(message, { cause: err });
  }
  return {
    kind: 'docker',
    socketPath,
    dockerHost: `unix://${socketPath}`,
    image: BUSYBOX_IMAGE,
    api,
    ...helpers,
    kill: () => stopDaemon('SIGKILL'),
    async restart() {
      await stopDaemon('SIGTERM');
      await startDaemon();
    },
    stop,
    log,
  };
}
