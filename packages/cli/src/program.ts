import { Command, CommanderError } from 'commander';
import { registerAdapt } from './commands/adapt.js';
import { registerFmt } from './commands/fmt.js';
import { registerHashPassword } from './commands/hash-password.js';
import { registerHealth } from './commands/health.js';
import { registerOpenapi } from './commands/openapi.js';
import { registerReload } from './commands/reload.js';
import { registerTrust, type TrustCommands } from './commands/trust.js';
import { registerValidate } from './commands/validate.js';
import { registerVersion } from './commands/version.js';
import { type ConfigSource, resolveConfigPath } from './config-path.js';
import { applyEnvFile } from './env-file.js';
import { EXIT_USAGE, UsageError } from './errors.js';

export type { TrustCommandOptions, TrustCommandReport, TrustCommands } from './commands/trust.js';

/** Options of `proxyd run`. */
export interface RunOptions {
  /** Proxyfile path (flag `--config`, else env `PROXY_CONFIG`, else `./Proxyfile` when it exists). */
  config?: string;
  /** Where {@link config} came from; absent with no Proxyfile. */
  configFrom?: ConfigSource;
  /** Admin listener `host:port` (flag `--admin`). */
  admin?: string;
  /** `--admin-socket [path]`: true without a path (use /var/run/proxy-admin.sock). */
  adminSocket?: string | true;
  /** False with `--no-metrics`. */
  metrics?: boolean;
  /** Container runtime endpoint (flag `--docker-host`; else the Proxyfile's `docker { host }`, `DOCKER_HOST`, the usual sockets). */
  dockerHost?: string;
  /** False with `--no-docker`: no container discovery. */
  docker?: boolean;
  /** State directory (flag `--state-dir`). */
  stateDir?: string;
  /** Certificate directory (flag `--cert-dir`, else env `PROXY_CERT_DIR`). */
  certDir?: string;
  /** Data-plane worker processes (flag `--workers`, else env `PROXY_WORKERS`); absent: the daemon's default. */
  workers?: number;
  /** Loaded certificates the control plane keeps (env `PROXY_CERT_CACHE`); absent: 10,000. */
  certCache?: number;
  /** TLS contexts each worker keeps (env `PROXY_WORKER_CERT_CACHE`); absent: 10,000. */
  workerCertCache?: number;
  /** `--spare-worker`: with workers, keep one more started worker to replace a crashed one at once. */
  spareWorker?: boolean;
  /** `--watch`: reload when the Proxyfile (or a file it imports) changes. */
  watch?: boolean;
  /** `--pidfile <path>`: write the process id there once started; removed on a clean exit. */
  pidfile?: string;
}

/** Parses `--workers` / `PROXY_WORKERS`: a whole number from 1 to 1024. */
export function parseWorkers(value: string, from: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > 1024) {
    throw new UsageError(`invalid ${from} "${value}": a whole number of worker processes from 1 to 1024`);
  }
  return Number(value);
}

/** Parses `PROXY_CERT_CACHE` / `PROXY_WORKER_CERT_CACHE`: a whole number of certificates from 1 to 10,000,000. */
export function parseCacheCapacity(value: string, from: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > 10_000_000) {
    throw new UsageError(`invalid ${from} "${value}": a whole number of certificates from 1 to 10000000`);
  }
  return Number(value);
}

/**
 * The daemon side of the CLI, implemented by the composition root: `run`,
 * `demo`, and `trust` / `untrust` (which need the certificates package).
 */
export interface DaemonCommands extends TrustCommands {
  run(options: RunOptions): Promise<void>;
  demo(): Promise<void>;
}

/** What `buildProgram` reports about the build (`proxyd version`). */
export interface ProgramOptions {
  /** Reads the build info; default: `dist/build-info.json` of this package. */
  buildInfo?: Parameters<typeof registerVersion>[2];
}

/**
 * A usage error commander printed: exits {@link EXIT_USAGE} (help and
 * `--version` exit 0) once `main` catches it; the line is already on stderr.
 */
export function isReported(err: unknown): err is CommanderError {
  return err instanceof CommanderError;
}

/**
 * Builds the `proxyd` command-line program. A usage error (unknown command
 * or option, missing argument, conflicting flags) prints one line,
 * `proxyd: <what> (see proxyd <command> --help)`, and the parse rejects with
 * a `CommanderError` whose `exitCode` is 2; help and `--version` reject with
 * `exitCode` 0. Errors thrown by a command reject as they are (`errorLine`
 * and `exitCodeOf` turn them into the line and the status).
 */
export function buildProgram(version: string, daemon: DaemonCommands, options: ProgramOptions = {}): Command {
  const program = new Command('proxyd')
    .description('A reverse proxy with automatic HTTPS, first-party analytics and a JSON admin API.')
    .version(version, '-v, --version', 'print the version (`proxyd version` adds build information)')
    .exitOverride((err) => {
      throw err.exitCode === 0 ? err : new CommanderError(EXIT_USAGE, err.code, err.message);
    });

  program
    .command('run')
    .description('run the proxy (Proxyfile from --config, PROXY_CONFIG or ./Proxyfile)')
    .option('-c, --config <path>', 'Proxyfile path (env PROXY_CONFIG, default ./Proxyfile when it exists)')
    .option('--admin <host:port>', 'admin API listener (default 127.0.0.1:6190)')
    .option('--admin-socket [path]', 'also serve the admin API on a Unix socket (default /var/run/proxy-admin.sock)')
    .option('--no-metrics', 'disable Prometheus metrics (GET /metrics answers 404)')
    .option(
      '--docker-host <url>',
      'container runtime endpoint, unix:///path or tcp://host:port (default: DOCKER_HOST, then the Docker and Podman sockets)',
    )
    .option('--no-docker', 'no container discovery (routes from proxy.* labels)')
    .option(
      '--state-dir <dir>',
      'where API routes persist (default /var/lib/proxyd as root, else ~/.local/state/proxyd)',
    )
    .option('--cert-dir <dir>', 'certificate storage directory (env PROXY_CERT_DIR, default /etc/proxy/certs)')
    .option('--workers <n>', 'data-plane worker processes (env PROXY_WORKERS; 1: this process serves)')
    .option('--spare-worker', 'with workers, keep one started spare that replaces a crashed worker at once')
    .option('--watch', 'reload when the Proxyfile or a file it imports changes (debounced, 5 s apart at most)')
    .option('--envfile <path>', 'load KEY=VALUE lines into the environment first (PROXY_*, {$VAR}); set ones win')
    .option('--pidfile <path>', 'write the process id to this file once started (removed on exit)')
    .action(async (opts: Omit<RunOptions, 'workers' | 'configFrom'> & { workers?: string; envfile?: string }) => {
      const { workers: rawFlag, envfile, config: flag, ...rest } = opts;
      if (envfile !== undefined) applyEnvFile(envfile);
      const config = resolveConfigPath(flag);
      if (rest.watch && config === null) {
        throw new UsageError('run --watch needs a Proxyfile: --config <path>, PROXY_CONFIG, or ./Proxyfile');
      }
      const certDir = rest.certDir ?? process.env.PROXY_CERT_DIR;
      const rawWorkers = rawFlag ?? process.env.PROXY_WORKERS;
      const workers =
        rawWorkers === undefined
          ? undefined
          : parseWorkers(rawWorkers, rawFlag === undefined ? 'PROXY_WORKERS' : '--workers');
      const certCache = process.env.PROXY_CERT_CACHE;
      const workerCertCache = process.env.PROXY_WORKER_CERT_CACHE;
      await daemon.run({
        ...rest,
        ...(certCache === undefined ? {} : { certCache: parseCacheCapacity(certCache, 'PROXY_CERT_CACHE') }),
        ...(workerCertCache === undefined
          ? {}
          : { workerCertCache: parseCacheCapacity(workerCertCache, 'PROXY_WORKER_CERT_CACHE') }),
        ...(config === null ? {} : { config: config.path, configFrom: config.from }),
        ...(certDir === undefined ? {} : { certDir }),
        ...(workers === undefined ? {} : { workers }),
      });
    });

  program
    .command('demo')
    .description('run a demo: proxyd on unprivileged ports in front of a small demo page')
    .action(() => daemon.demo());

  registerReload(program);
  registerHealth(program);
  registerValidate(program);
  registerAdapt(program);
  registerFmt(program);
  registerHashPassword(program);
  registerVersion(program, version, options.buildInfo);
  registerOpenapi(program);
  registerTrust(program, daemon);

  // One line per usage error, naming the help of the command it concerns.
  for (const command of [program, ...program.commands]) {
    const help = command === program ? 'proxyd --help' : `proxyd ${command.name()} --help`;
    command.configureOutput({
      outputError: (str, write) => {
        const text = str
          .replace(/^error: /, '')
          .split('\n')
          .map((line) => line.trim())
          .filter((line) => line !== '')
          .join(' ');
        write(`proxyd: ${text} (see ${help})\n`);
      },
    });
  }
  return program;
}
