#!/usr/bin/env node
// First: `proxyd run` may re-execute itself with the primary's heap flags before anything else loads.
import './primary-heap.js';
import { hideHttpWebSocketExports } from './http-exports.js';

// Before any module importing node:http loads (see http-exports.ts): the program's modules come after.
hideHttpWebSocketExports();
// Not a top-level await: the single executable's bundle is CommonJS, which has none.
import('./program.js').catch((err: unknown) => {
  process.stderr.write(`proxyd: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
