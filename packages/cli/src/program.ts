import { Command } from 'commander';
import { registerFmt } from './commands/fmt.js';
import { registerOpenapi } from './commands/openapi.js';
import { registerReload } from './commands/reload.js';
import { registerTrust, type TrustCommands } from './commands/trust.js';
import { registerValidate } from './commands/validate.js';

export type { TrustCommandOptions, TrustCommandReport, TrustCommands } from './commands/trust.js';

/** Options of `proxyd run`. */
export interface RunOptions {
  /** Proxyfile path (flag `--config`, else env `PROXY_CONFIG`). */
  config?: string;
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
}

/** Parses `--workers` / `PROXY_WORKERS`: a whole number from 1 to 1024. */
export function parseWorkers(value: string, from: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > 1024) {
    throw new Error(`invalid ${from} "${value}": a whole number of worker processes from 1 to 1024`);
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

/** Builds the `proxyd` command-line program. */
export function buildProgram(version: string, daemon: DaemonCommands): Command {
  const program = new Command('proxyd')
    .description('A reverse proxy with automatic HTTPS, first-party analytics and a JSON admin API.')
    .version(version, '-v, --version', 'print the version')
    .showHelpAfterError();

  program
    .command('run')
    .description('run the proxy with a Proxyfile')
    .option('-c, --config <path>', 'Proxyfile path (env PROXY_CONFIG)')
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
    .action(async (opts: Omit<RunOptions, 'workers'> & { workers?: string }) => {
      const config = opts.config ?? process.env.PROXY_CONFIG;
      const certDir = opts.certDir ?? process.env.PROXY_CERT_DIR;
      const rawWorkers = opts.workers ?? process.env.PROXY_WORKERS;
      const workers =
        rawWorkers === undefined
          ? undefined
          : parseWorkers(rawWorkers, opts.workers === undefined ? 'PROXY_WORKERS' : '--workers');
      const { workers: _, ...rest } = opts;
      await daemon.run({
        ...rest,
        ...(config === undefined ? {} : { config }),
        ...(certDir === undefined ? {} : { certDir }),
        ...(workers === undefined ? {} : { workers }),
      });
    });

  program
    .command('demo')
    .description('run a demo: proxyd on unprivileged ports in front of a small demo page')
    .action(() => daemon.demo());

  registerReload(program);
  registerOpenapi(program);
  registerValidate(program);
  registerFmt(program);
  registerTrust(program, daemon);

  return program;
}
