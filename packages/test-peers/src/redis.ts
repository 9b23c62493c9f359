import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { freePort } from './pebble.js';

/** A real `redis-server` or `redis-sentinel` on 127.0.0.1, run as the current user from a temp dir. */
export interface StartedRedis {
  /** `127.0.0.1`, or the {@link RedisOptions.address} it also listens on. */
  readonly host: string;
  readonly port: number;
  /** `redis://<host>:<port>`. */
  readonly url: string;
  /** `redis-cli -p <port> <args…>`: the reply, trimmed (raw: binary values as they are). */
  cli(...args: string[]): string;
  /** The end of what the server wrote, for failure messages. */
  log(): string;
  /** Stops the server (SIGTERM, then SIGKILL after 5 s) and removes the temp dir; twice is fine. */
  stop(): Promise<void>;
}

/** Options of {@link startRedis}. */
export interface RedisOptions {
  /** Start as a replica of this primary (`--replicaof 127.0.0.1 <port>`). */
  replicaOf?: number;
  /** Extra `redis-server` arguments, e.g. `['--requirepass', 'x']`. */
  args?: string[];
  /** The port (default a free one): a Redis started again where a stopped one was. */
  port?: number;
  /**
   * An address to listen on besides 127.0.0.1, e.g. a test bridge's
   * ({@link createFleetNetwork}): `url` then names it, for nodes in their
   * own network namespaces.
   */
  address?: string;
}

/**
 * Starts Debian's `redis-server` on a free loopback port with nothing
 * persisted (`--save '' --appendonly no`) and waits until it answers PING.
 */
export async function startRedis(options: RedisOptions = {}): Promise<StartedRedis> {
  const port = options.port ?? (await freePort());
  const dir = mkdtempSync(path.join(tmpdir(), 'proxyd-redis-'));
  const bind = options.address === undefined ? ['127.0.0.1'] : ['127.0.0.1', options.address];
  const args = ['--port', String(port), '--bind', ...bind, '--dir', dir, '--save', '', '--appendonly', 'no'];
  // Protected mode refuses every address but loopback when no password is set; the bridge is this host's own.
  if (options.address !== undefined) args.push('--protected-mode', 'no');
  if (options.replicaOf !== undefined) {
    args.push('--replicaof', options.address ?? '127.0.0.1', String(options.replicaOf));
  }
  args.push(...(options.args ?? []));
  return await started('redis-server', args, port, dir, options.address);
}

/** Options of {@link startSentinel}. */
export interface SentinelOptions {
  /** The name Sentinel knows the primary by (default `proxyd`). */
  masterName?: string;
  /** The primary's port on 127.0.0.1 (or `address`). */
  primaryPort: number;
  /**
   * As {@link RedisOptions.address}: Sentinel listens there too and
   * watches the primary at that address, so it names it (and, after a
   * failover, the replica started with the same address) to nodes in
   * network namespaces.
   */
  address?: string;
}

/**
 * Starts Debian's `redis-sentinel` monitoring the primary on 127.0.0.1
 * with a quorum of 1 and short timeouts (down after 1 s, failover timeout
 * 5 s), so `SENTINEL FAILOVER <name>` promotes a replica within seconds.
 */
export async function startSentinel(options: SentinelOptions): Promise<StartedRedis> {
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'proxyd-sentinel-'));
  const name = options.masterName ?? 'proxyd';
  const conf = path.join(dir, 'sentinel.conf');
  writeFileSync(
    conf,
    [
      `port ${port}`,
      `bind 127.0.0.1${options.address === undefined ? '' : ` ${options.address}`}`,
      ...(options.address === undefined ? [] : ['protected-mode no']),
      `dir ${dir}`,
      `sentinel monitor ${name} ${options.address ?? '127.0.0.1'} ${options.primaryPort} 1`,
      `sentinel down-after-milliseconds ${name} 1000`,
      `sentinel failover-timeout ${name} 5000`,
      `sentinel parallel-syncs ${name} 1`,
      '',
    ].join('\n'),
  );
  return await started('redis-sentinel', [conf], port, dir, options.address);
}

async function started(
  program: string,
  args: string[],
  port: number,
  dir: string,
  host = '127.0.0.1',
): Promise<StartedRedis> {
  const child: ChildProcess = spawn(program, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-16_000);
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-16_000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let stopped: Promise<void> | undefined;
  const stop = () => {
    stopped ??= (async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    })();
    return stopped;
  };
  const cli = (...cmd: string[]) =>
    execFileSync('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...cmd], {
      encoding: 'latin1',
      stdio: ['ignore', 'pipe', 'pipe'],
    }).trim();
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) {
      await stop();
      throw new Error(`${program} exited (${child.exitCode}):\n${output.slice(-4000)}`);
    }
    try {
      if (cli('PING') === 'PONG') break;
    } catch {
      // not listening yet
    }
    if (i > 100) {
      await stop();
      throw new Error(`${program} did not answer PING on port ${port} within 10 s:\n${output.slice(-4000)}`);
    }
    await delay(100);
  }
  return {
    host,
    port,
    url: `redis://${host}:${port}`,
    cli,
    log: () => output.slice(-4000),
    stop,
  };
}
