// The `proxyd` command line: loaded by main.ts once node:http's exports are trimmed.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import type { CertificateStorage } from '@proxyd/certificates';
import { buildProgram, errorLine, exitCodeOf, isReported, type RunOptions, runDemo, UsageError } from '@proxyd/cli';
import { createLogging, type Logging } from '@proxyd/telemetry';
import { releaseStartupMemory, tuneHeapForStreaming } from './heap-tuning.js';

const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  version: string;
};
// Before any traffic: Node 24 reclaims socket Buffers with major GCs otherwise.
tuneHeapForStreaming();

/**
 * The daemon's loggers from `PROXY_LOG`, read when a command starts (after
 * `--envfile`); a bad value is a usage error, one line naming the levels.
 */
function loggingFromEnv(): Logging {
  try {
    return createLogging(process.env.PROXY_LOG);
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
}

/**
 * `--pidfile`: writes the pid now (an unwritable path fails before anything
 * starts) and removes the file when the process exits, if it still holds
 * this pid.
 */
function writePidfile(file: string): void {
  try {
    writeFileSync(file, `${process.pid}\n`);
  } catch (err) {
    throw new Error(`cannot write pidfile ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  process.once('exit', () => {
    try {
      if (readFileSync(file, 'utf8').trim() === String(process.pid)) rmSync(file, { force: true });
    } catch {
      // Already gone.
    }
  });
}

/** Loads the Proxyfile; a file that cannot be read says which (a Proxyfile error says where). */
async function readProxyfile(file: string) {
  const { loadProxyfile } = await import('./daemon.js');
  try {
    return await loadProxyfile(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).syscall === undefined) throw err;
    throw new Error(`cannot read ${file}: ${(err as Error).message}`);
  }
}

/**
 * Runs `use` with the shared storage a Proxyfile's `storage redis` names
 * (connected, then closed), or with none (the cert dir) when there is no
 * Proxyfile or it names none. An unreachable Redis is an error: the
 * fleet's root cannot be read, and a root made elsewhere would be the
 * wrong one.
 */
async function withCaStorage<T>(
  configPath: string | undefined,
  use: (storage: { storage: CertificateStorage; name: string } | undefined) => Promise<T>,
): Promise<T> {
  const storageConfig = configPath === undefined ? undefined : (await readProxyfile(configPath)).global.storage;
  if (storageConfig === undefined) return use(undefined);
  const { openRedisStorage } = await import('@proxyd/certificates');
  const storage = await openRedisStorage(storageConfig);
  const where =
    storageConfig.sentinels.length > 0
      ? `${storageConfig.master_name} through Sentinel ${storageConfig.sentinels.join(', ')}`
      : (storageConfig.url ?? 'redis://127.0.0.1:6379');
  try {
    return await use({ storage, name: `Redis ${where}, key prefix ${storageConfig.key_prefix} (${configPath})` });
  } finally {
    await storage.close();
  }
}

/** The line `run` prints when it has nothing to serve, and what the user can do. */
function nothingToServe(options: RunOptions, admin: string): string {
  const docker = options.docker !== false;
  return (
    'proxyd: nothing to serve yet: no Proxyfile (--config, PROXY_CONFIG or ./Proxyfile) and no saved routes' +
    `${docker ? '' : ', container discovery off'}. Running anyway: add routes through the admin API at http://${admin}/routes` +
    `${docker ? ' or with proxy.* container labels' : ''}; or try \`proxyd demo\`, or \`proxyd run --config <Proxyfile>\`.\n`
  );
}

// The daemon's modules load only for the commands that need them: `proxyd
// fmt`, `validate` or `version` start in a fraction of the time.
const program = buildProgram(version, {
  async run(options) {
    const logging = loggingFromEnv();
    const [
      { defaultGlobalOptions },
      { watchProxyfile },
      { startDaemon },
      { DEFAULT_ADMIN_SOCKET, RELOAD_COOLDOWN_MS },
    ] = await Promise.all([
      import('@proxyd/model'),
      import('@proxyd/proxyfile'),
      import('./daemon.js'),
      import('@proxyd/admin-api'),
    ]);
    const logger = logging.root;
    if (options.pidfile !== undefined) writePidfile(options.pidfile);
    if (options.configFrom === 'default') {
      logging.forTarget('proxy::config').info({ path: options.config }, 'using the Proxyfile in the current directory');
    }
    // Without a Proxyfile the daemon starts with default global options, no
    // Proxyfile routes and no config watcher (POST /reload answers 501).
    const config = options.config ? await readProxyfile(options.config) : { global: defaultGlobalOptions(), sites: [] };
    const adminToken = process.env.PROXY_ADMIN_TOKEN;
    const adminSocket = options.adminSocket === true ? DEFAULT_ADMIN_SOCKET : options.adminSocket;
    const daemon = await startDaemon({
      config,
      configPath: options.config ?? null,
      logger,
      logging,
      metrics: options.metrics !== false,
      docker: options.docker !== false,
      ...(options.dockerHost === undefined ? {} : { dockerHost: options.dockerHost }),
      ...(options.admin === undefined ? {} : { admin: options.admin }),
      ...(adminSocket === undefined ? {} : { adminSocket }),
      ...(adminToken === undefined ? {} : { adminToken }),
      ...(options.stateDir === undefined ? {} : { stateDir: options.stateDir }),
      ...(options.certDir === undefined ? {} : { certDir: options.certDir }),
      ...(options.certCache === undefined ? {} : { certCache: options.certCache }),
      ...(options.workerCertCache === undefined ? {} : { workerCertCache: options.workerCertCache }),
      // One data-plane worker per CPU this process may use, unless told otherwise.
      workers: options.workers ?? availableParallelism(),
      spareWorker: options.spareWorker === true,
    });
    if (options.config === undefined && daemon.routeCount() === 0) {
      process.stderr.write(nothingToServe(options, `${daemon.adminAddress.host}:${daemon.adminAddress.port}`));
    }
    // Started: what loading the control plane took goes back (~25 MB of an idle primary, issue 32).
    releaseStartupMemory();
    const watch =
      options.watch && options.config !== undefined && daemon.reload
        ? watchProxyfile({
            configPath: options.config,
            reload: daemon.reload,
            logger: logging.forTarget('proxy::config'),
            // The admin API's `POST /reload` cooldown: a save never reloads faster than an operator may.
            cooldownMs: RELOAD_COOLDOWN_MS,
          })
        : undefined;
    const serverLog = logging.forTarget('proxy::server');
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) {
        // A second signal: exit at once, cutting what is in flight.
        serverLog.warn({ signal }, 'second signal: exiting now');
        process.exit(1);
      }
      stopping = true;
      watch?.close();
      serverLog.info(
        { signal, grace_period_ms: config.global.grace_period_ms },
        'shutting down: finishing requests in flight (send the signal again to exit now)',
      );
      void daemon.close().then(() => process.exit(0));
    };
    process.on('SIGINT', () => stop('SIGINT'));
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGHUP', () => {
      if (!daemon.reload) {
        logging.forTarget('proxy::config').warn('SIGHUP ignored: no Proxyfile to reload (started without one)');
        return;
      }
      void daemon.reload();
    });
  },
  async demo() {
    const logging = loggingFromEnv();
    const { startDaemon } = await import('./daemon.js');
    await runDemo((options) => startDaemon({ ...options, logger: logging.root, logging }));
  },
  // The real stores: Debian's system locations and $HOME/.pki/nssdb.
  async trust({ certDir, config, system, nss }) {
    const { trustLocalRoot } = await import('@proxyd/certificates/trust');
    return withCaStorage(config, (storage) =>
      trustLocalRoot({ ...(certDir === undefined ? {} : { certDir }), storage, system: system && {}, nss: nss && {} }),
    );
  },
  async untrust({ certDir, config, system, nss }) {
    const { untrustLocalRoot } = await import('@proxyd/certificates/trust');
    return withCaStorage(config, (storage) =>
      untrustLocalRoot({
        ...(certDir === undefined ? {} : { certDir }),
        storage,
        system: system && {},
        nss: nss && {},
      }),
    );
  },
});

program.parseAsync(process.argv).catch((err: unknown) => {
  // Commander already printed its one line (or the help, or the version).
  if (isReported(err)) process.exit(err.exitCode);
  process.stderr.write(`${errorLine(err)}\n`);
  process.exit(exitCodeOf(err));
});
