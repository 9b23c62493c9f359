import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { BUSYBOX_IMAGE, importBusyboxImage } from './busybox-image.js';
import { type ContainerRuntime, containerHelpers } from './container-runtime.js';
import { engineApi, waitForPing } from './engine-api.js';
import { armReaper, PROCESS_FUNCTIONS, removeDirScript, shellQuote } from './reaper.js';

/** Options of {@link startPodman}. */
export interface PodmanOptions {
  /** How long the API service may take to answer `/_ping`, ms (default 15 000). */
  startTimeoutMs?: number;
}

/**
 * A {@link ContainerRuntime} on Podman, whose store the `podman` command
 * (and podman-compose, which runs it) reaches under {@link env}.
 */
export interface PodmanRuntime extends ContainerRuntime {
  /**
   * `process.env` plus `CONTAINERS_CONF` and `CONTAINERS_STORAGE_CONF`: a
   * plain `podman` run with it uses this instance's store, settings and
   * networks, beside the API service.
   */
  readonly env: NodeJS.ProcessEnv;
}

/** The hard limit of `resource` ("Max open files", "Max processes") of this process, or `fallback` when unlimited. */
function hardLimit(resource: string, fallback: number): number {
  const line = readFileSync('/proc/self/limits', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(resource));
  const hard = line?.slice(resource.length).trim().split(/\s+/)[1];
  return hard === undefined || hard === 'unlimited' ? fallback : Number(hard);
}

/**
 * Podman's `containers.conf` for a store in `dir`. Each setting works around
 * this host (Debian 12, podman 4.3.1, no systemd, cgroup v1+v2 hybrid, no
 * CAP_SYS_RESOURCE), or isolates the instance from others on the host.
 */
function containersConf(dir: string): string {
  // Podman asks for nofile=1048576 and nproc=4194304; without CAP_SYS_RESOURCE
  // the OCI runtime cannot raise them ("setrlimit RLIMIT_NOFILE: Operation not
  // permitted"). Podman also lowers its own RLIMIT_NPROC to 32768.
  const nofile = hardLimit('Max open files', 1_048_576);
  const nproc = Math.min(hardLimit('Max processes', 32_768), 32_768);
  return `[containers]
default_ulimits = ["nofile=${nofile}:${nofile}", "nproc=${nproc}:${nproc}"]
init_path = "/usr/bin/catatonit"

[engine]
# crun 1.8 fails every container on a hybrid cgroup host; runc works.
runtime = "runc"
cgroup_manager = "cgroupfs"
# No journald: a file, per instance (the default one is shared by every store on the host).
events_logger = "file"
events_logfile_path = "${dir}/events.log"
tmp_dir = "${dir}/tmp"

[network]
# Networks made by this instance stay in it (the default /etc/containers/networks is the host's).
network_config_dir = "${dir}/networks"
`;
}

/**
 * Podman's Docker-compatible API (`podman system service`) on its own unix
 * socket, with a store of its own in a temp dir and the local busybox image.
 * Containers survive `kill()` (podman has no daemon); `stop()` removes them.
 * A detached reaper cleans up if this process dies first.
 */
export async function startPodman(options: PodmanOptions = {}): Promise<PodmanRuntime> {
  const dir = mkdtempSync(path.join(tmpdir(), 'proxyd-podman-'));
  const conf = path.join(dir, 'containers.conf');
  const storageConf = path.join(dir, 'storage.conf');
  const socketPath = path.join(dir, 'podman.sock');
  const logFile = path.join(dir, 'service.log');
  const pidFile = path.join(dir, 'service.pid');
  writeFileSync(conf, containersConf(dir));
  // The same store as the flags below, for a `podman` run without them (podman-compose's).
  writeFileSync(
    storageConf,
    `[storage]\ngraphroot = "${path.join(dir, 'root')}"\nrunroot = "${path.join(dir, 'run')}"\n`,
  );
  const env = { ...process.env, CONTAINERS_CONF: conf, CONTAINERS_STORAGE_CONF: storageConf };
  const globals = ['--root', path.join(dir, 'root'), '--runroot', path.join(dir, 'run')];
  const podman = `podman ${globals.map(shellQuote).join(' ')}`;
  const reaper = armReaper(
    [
      PROCESS_FUNCTIONS,
      `export CONTAINERS_CONF=${shellQuote(conf)}`,
      `stop_pid "$(cat ${shellQuote(pidFile)} 2>/dev/null)"`,
      `${podman} rm -af -t 0 >/dev/null 2>&1`,
      removeDirScript(dir),
    ].join('\n'),
  );

  const api = engineApi(socketPath);
  let service: ChildProcess | undefined;
  const exited = (child: ChildProcess) =>
    child.exitCode !== null || child.signalCode !== null
      ? Promise.resolve()
      : new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const log = () => {
    try {
      return readFileSync(logFile, 'utf8').slice(-4000);
    } catch {
      return '';
    }
  };
  const startService = async () => {
    rmSync(socketPath, { force: true });
    const out = openSync(logFile, 'a');
    const child = spawn('podman', [...globals, 'system', 'service', '--time=0', `unix://${socketPath}`], {
      env,
      stdio: ['ignore', out, out],
    });
    closeSync(out);
    const failed = new Promise<Error>((resolve) => child.once('error', resolve));
    child.unref();
    service = child;
    if (child.pid !== undefined) writeFileSync(pidFile, String(child.pid));
    const up = await Promise.race([waitForPing(api, options.startTimeoutMs ?? 15_000), failed]);
    if (up !== true) {
      const why = up instanceof Error ? `${up.message} (scripts/ensure-test-deps.sh installs podman)` : log();
      throw new Error(`podman system service did not come up: ${why}`);
    }
  };
  const stopService = async (signal: NodeJS.Signals) => {
    const child = service;
    if (!child) return;
    child.ref(); // awaited below: keep Node up until it is gone
    const gone = exited(child);
    child.kill(signal);
    await gone;
    service = undefined;
  };

  const { dispose, ...helpers } = containerHelpers(api, {
    // Podman schedules healthchecks with systemd timers; without systemd nothing runs them.
    healthcheckDriver(id, intervalMs) {
      let busy = false;
      const timer = setInterval(() => {
        if (busy) return;
        busy = true;
        execFile('podman', [...globals, 'healthcheck', 'run', id], { env }, () => {
          busy = false;
        });
      }, intervalMs);
      timer.unref();
      return () => clearInterval(timer);
    },
  });
  let stopped: Promise<void> | undefined;
  const stop = () => {
    stopped ??= (async () => {
      dispose();
      service = undefined;
      await reaper.run();
    })();
    return stopped;
  };

  try {
    await startService();
    await importBusyboxImage(api, path.join(dir, 'rootfs'));
  } catch (err) {
    const message = `${(err as Error).message}\n${log()}`;
    await stop();
    throw new Error(message, { cause: err });
  }
  return {
    kind: 'podman',
    env,
    socketPath,
    dockerHost: `unix://${socketPath}`,
    image: BUSYBOX_IMAGE,
    api,
    ...helpers,
    kill: () => stopService('SIGKILL'),
    async restart() {
      await stopService('SIGTERM');
      await startService();
    },
    stop,
    log,
  };
}
