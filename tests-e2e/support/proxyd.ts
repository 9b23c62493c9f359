import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '@proxyd/test-peers';

/** The built daemon entry. */
export const PROXYD_MAIN = fileURLToPath(new URL('../../apps/proxyd/dist/main.js', import.meta.url));

/**
 * An installed `proxyd` executable to test instead of the built entry: the
 * npm package's bin or the single executable (`tests-e2e/install-*.test.ts`
 * set it). Empty or unset: `node apps/proxyd/dist/main.js`.
 */
export const PROXYD_BIN = process.env.PROXYD_BIN || undefined;

/** The program and arguments that run `proxyd <args>`: {@link PROXYD_BIN} when set, else node on the built entry. */
export function proxydCommand(args: readonly string[]): { file: string; args: string[] } {
  return PROXYD_BIN === undefined
    ? { file: process.execPath, args: [PROXYD_MAIN, ...args] }
    : { file: PROXYD_BIN, args: [...args] };
}

/** A free TCP port on 127.0.0.1, never one this process was given before. */
export { freePort };

/** A real upstream on loopback (or `host`) that answers every request with `handler`. */
export async function startUpstream(
  handler: http.RequestListener,
  host = '127.0.0.1',
): Promise<{ port: number; server: http.Server; close(): Promise<void> }> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    port,
    server,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * When {@link startProxyd} gives a start up: once the daemon (its process and its workers) has used this much
 * CPU time without becoming ready, ms. A start costs about 1.4 s of CPU with one worker and 2.9 s with two
 * (issue 28, measured): this is ten times that. Counted in CPU rather than wall time because wall time says
 * little about a start on a loaded machine: at nice 19 beside `stress-ng --cpu 2`, two daemons with two
 * workers each started in 30 s to over 60 s (the bound this was before), for the same CPU.
 */
const READY_CPU_MS = 30_000;
/**
 * The wall-time bound of a start, ms: a start that waits without computing (or where /proc cannot be read,
 * so CPU time counts 0). Only a start that fails waits this long.
 */
const READY_WITHIN_MS = 300_000;
/**
 * How long one {@link startProxyd} may take before it fails, ms (its wall-time bound). A test that starts
 * daemons inside `it` adds this per start done one after another to its own bound: its timeout then fires only
 * where startProxyd would, not on a start that is slow because the machine is starved.
 */
export const START_WITHIN_MS = READY_WITHIN_MS;
/** Clock ticks per second of /proc/<pid>/stat's times (USER_HZ: 100 on Linux's every architecture). */
const USER_HZ = 100;

/** CPU time used so far by `pid` and its descendants (a daemon's workers), ms; 0 where /proc cannot be read. */
function treeCpuMs(pid: number): number {
  let ms = 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // After "pid (comm) ": state is field 3, utime field 14, stime field 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    ms += ((Number(fields[11]) + Number(fields[12])) * 1000) / USER_HZ;
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      const children = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim();
      for (const child of children === '' ? [] : children.split(' ')) ms += treeCpuMs(Number(child));
    }
  } catch {
    // Gone meanwhile, or no /proc.
  }
  return ms;
}

/** How long `stop()` waits after SIGTERM before SIGKILL (ms): a drain with workers under load takes seconds. */
const STOP_DEADLINE_MS = 20_000;

/** util-linux's setpriv (Debian: essential), which sets a parent-death signal and execs the command. */
const SETPRIV = '/usr/bin/setpriv';

/**
 * `command` run with SIGTERM as its parent-death signal, where setpriv exists: a daemon whose test process
 * ends without stopping it (vitest SIGTERMs a test file's process after a hook timed out while a start was
 * still in flight) stops instead of serving on, orphaned, beside the next runs. setpriv execs the command:
 * the child's pid is the daemon's.
 */
function orphanGuard(command: { file: string; args: string[] }): { file: string; args: string[] } {
  return existsSync(SETPRIV)
    ? { file: SETPRIV, args: ['--pdeathsig', 'TERM', command.file, ...command.args] }
    : command;
}

/** A proxyd child process started by {@link startProxyd}. */
export interface RunningProxyd {
  child: ChildProcess;
  dir: string;
  configPath: string;
  httpPort: number;
  httpsPort: number;
  adminPort: number;
  /** Where the admin API listens: `127.0.0.1`, or the namespace's address ({@link StartOptions.netns}). */
  adminHost: string;
  /** Everything the process wrote so far. */
  output(): string;
  stop(): Promise<number | null>;
}

/** Options of {@link startProxyd}. */
export interface StartOptions {
  /** Proxyfile body after the global block; `HTTP_PORT` is replaced by the chosen port. */
  sites: string;
  /** Extra lines in the global options block. */
  global?: string;
  /**
   * The `auto_https` global option; `on` (the daemon's default) writes none.
   * Default here `disable_redirects`: `.test` sites and API routes get
   * local-CA certificates within milliseconds, and tests about other things
   * keep speaking plain HTTP to them. Tests of HTTPS behaviour pass `on`.
   */
  autoHttps?: 'on' | 'off' | 'disable_redirects' | 'disable_certs';
  /** The `http_port` (default a free port). */
  httpPort?: number;
  /** The `https_port` (default a free port). */
  httpsPort?: number;
  env?: NodeJS.ProcessEnv;
  args?: string[];
  /** How proxyd is told the Proxyfile path: `flag` (default, `--config`) or `env` (`PROXY_CONFIG`). */
  configVia?: 'flag' | 'env';
  /**
   * How to tell it is ready: `log` (default) waits for the "proxyd ready" log
   * line; `health` polls GET /health on the admin port (for runs whose
   * PROXY_LOG hides info lines).
   */
  ready?: 'log' | 'health';
  /**
   * Run inside this network namespace (`ip netns exec`, see test-peers'
   * `createFleetNetwork`), with the admin API on the namespace's address so
   * the test reaches it from the host.
   */
  netns?: { name: string; address: string };
}

/**
 * Writes a Proxyfile in a fresh directory, starts the built proxyd (or
 * {@link PROXYD_BIN}) on free ports and waits until it logs "proxyd ready".
 * Unless `args` names them, `--state-dir` and `--cert-dir` point into that
 * directory, which `stop()` removes.
 */
export async function startProxyd(options: StartOptions): Promise<RunningProxyd> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(options);
    } catch (err) {
      // freePort() releases a port before proxyd binds it: another process of this shared machine may take it
      // in between (seen beside a CPU hog, issue 28). Fresh ports, a few times.
      if (attempt < 3 && err instanceof PortTakenError) continue;
      throw err;
    }
  }
}

/** A start that failed because a port was taken (EADDRINUSE). */
class PortTakenError extends Error {}

async function startOnce(options: StartOptions): Promise<RunningProxyd> {
  const dir = await mkdtemp(path.join(tmpdir(), 'proxyd-e2e-'));
  const httpPort = options.httpPort ?? (await freePort());
  const httpsPort = options.httpsPort ?? (await freePort());
  const adminPort = await freePort();
  const configPath = path.join(dir, 'Proxyfile');
  const autoHttps = options.autoHttps ?? 'disable_redirects';
  const global = `${autoHttps === 'on' ? '' : `\tauto_https ${autoHttps}\n`}${options.global ?? ''}`;
  const adminHost = options.netns?.address ?? '127.0.0.1';
  const proxyfile = `{\n\thttp_port ${httpPort}\n\thttps_port ${httpsPort}\n\tadmin ${adminHost}:${adminPort}\n${global}}\n\n${options.sites.replaceAll('HTTP_PORT', String(httpPort))}`;
  await writeFile(configPath, proxyfile);
  const args = options.args ?? [];
  // Never the machine's /var/lib/proxyd or /etc/proxy/certs: both default to this test's directory.
  const isolation = [
    ...(args.includes('--state-dir') ? [] : ['--state-dir', path.join(dir, 'state')]),
    ...(args.includes('--cert-dir') || options.env?.PROXY_CERT_DIR !== undefined
      ? []
      : ['--cert-dir', path.join(dir, 'certs')]),
  ];
  const viaEnv = options.configVia === 'env';
  const configArgs = viaEnv ? [] : ['--config', configPath];
  const daemon = proxydCommand(['run', ...configArgs, ...isolation, ...args]);
  // `ip netns exec` execs the daemon in place: the child's pid is the daemon's.
  const inner =
    options.netns === undefined
      ? daemon
      : { file: 'ip', args: ['netns', 'exec', options.netns.name, daemon.file, ...daemon.args] };
  const command = orphanGuard(inner);
  const child = spawn(command.file, command.args, {
    env: { ...process.env, ...options.env, ...(viaEnv ? { PROXY_CONFIG: configPath } : {}) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let deadline: NodeJS.Timeout | undefined;
  const ready = await Promise.race([
    new Promise<boolean>((resolve) => {
      const healthy = () =>
        request({ host: adminHost, port: adminPort }, { path: '/health' }).then(
          (res) => res.status === 200,
          () => false,
        );
      let checks = 0;
      const check = async () => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const ok = options.ready === 'health' ? await healthy() : output.includes('proxyd ready');
        if (ok) resolve(true);
        else if (++checks % 25 === 0 && child.pid !== undefined && treeCpuMs(child.pid) > READY_CPU_MS) {
          output += `\n(startProxyd: more than ${READY_CPU_MS} ms of CPU used without becoming ready)\n`;
          resolve(false);
        } else setTimeout(check, 20);
      };
      void check();
    }),
    exited.then(() => false),
    new Promise<boolean>((resolve) => {
      deadline = setTimeout(() => {
        output += `\n(startProxyd: not ready within ${READY_WITHIN_MS} ms)\n`;
        resolve(false);
      }, READY_WITHIN_MS);
    }),
  ]);
  clearTimeout(deadline);
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_DEADLINE_MS);
    const code = await exited;
    clearTimeout(timer);
    // A worker of a killed daemon exits on its own a moment later, writing the compile cache into the state
    // directory as it goes: rm retries (ENOTEMPTY) until it has.
    await rm(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
    return code;
  };
  if (!ready) {
    await stop();
    const message = `proxyd did not become ready:\n${output}`;
    throw output.includes('EADDRINUSE') ? new PortTakenError(message) : new Error(message);
  }
  return { child, dir, configPath, httpPort, httpsPort, adminPort, adminHost, output: () => output, stop };
}

/** Where {@link request} goes: a port on 127.0.0.1, or a host and port. */
export type Target = number | { host: string; port: number };

/** One HTTP request to 127.0.0.1:port (or `target`); resolves status, headers and body text. */
export function request(
  target: Target,
  options: { path?: string; method?: string; headers?: http.OutgoingHttpHeaders; body?: string } = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        ...(typeof target === 'number' ? { host: '127.0.0.1', port: target } : target),
        path: options.path ?? '/',
        method: options.method ?? 'GET',
        headers: options.headers,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}
