#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { buildProgram } from '@proxyd/cli';
import { defaultGlobalOptions } from '@proxyd/proxy-core';
import { DEFAULT_ADMIN_SOCKET } from './admin-socket.js';
import { loadProxyfile, startDaemon } from './daemon.js';
import { runDemo } from './demo.js';
import { tuneHeapForStreaming } from './heap-tuning.js';
import { createLogging } from './logging.js';
import { trustLocalRoot, untrustLocalRoot } from './trust.js';

const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  version: string;
};
// Before any traffic: Node 24 reclaims socket Buffers with major GCs otherwise.
tuneHeapForStreaming();
const logging = createLogging(process.env.PROXY_LOG);
const logger = logging.root;

const program = buildProgram(version, {
  async run(options) {
    // Without a Proxyfile the daemon starts with default global options, no
    // Proxyfile routes and no config watcher (POST /reload answers 501).
    const config = options.config ? await loadProxyfile(options.config) : { global: defaultGlobalOptions(), sites: [] };
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
      // One data-plane worker per CPU this process may use, unless told otherwise.
      workers: options.workers ?? availableParallelism(),
    });
    const serverLog = logging.forTarget('proxy::server');
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) {
        // A second signal: exit at once, cutting what is in flight.
        serverLog.warn({ signal }, 'second signal: exiting now');
        process.exit(1);
      }
      stopping = true;
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
        logging.forTarget('proxy::config').warn('SIGHUP ignored: no Proxyfile to reload (started without --config)');
        return;
      }
      void daemon.reload();
    });
  },
  demo: () => runDemo(logging),
  // The real stores: Debian's system locations and $HOME/.pki/nssdb.
  trust: ({ certDir, system, nss }) =>
    trustLocalRoot({ ...(certDir === undefined ? {} : { certDir }), system: system && {}, nss: nss && {} }),
  untrust: ({ certDir, system, nss }) =>
    untrustLocalRoot({ ...(certDir === undefined ? {} : { certDir }), system: system && {}, nss: nss && {} }),
});

program.parseAsync(process.argv).catch((err: unknown) => {
  process.stderr.write(`proxyd: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
