#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { buildProgram } from '@proxyd/cli';
import { pino } from 'pino';
import { loadProxyfile, startDaemon } from './daemon.js';
import { runDemo } from './demo.js';

const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  version: string;
};
const logger = pino({ base: null, timestamp: pino.stdTimeFunctions.isoTime });

const program = buildProgram(version, {
  async run(options) {
    if (!options.config) {
      throw new Error('no Proxyfile: pass --config <path> or set PROXY_CONFIG');
    }
    const config = await loadProxyfile(options.config);
    const daemon = await startDaemon({
      config,
      logger,
      ...(options.admin === undefined ? {} : { admin: options.admin }),
    });
    const stop = (signal: string) => {
      logger.info({ target: 'proxy::server', signal }, 'shutting down');
      void daemon.close().then(() => process.exit(0));
    };
    process.once('SIGINT', () => stop('SIGINT'));
    process.once('SIGTERM', () => stop('SIGTERM'));
  },
  demo: () => runDemo(logger),
});

program.parseAsync(process.argv).catch((err: unknown) => {
  process.stderr.write(`proxyd: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
