// The module the primary forks per data-plane worker (see worker-process.ts).
import { hideHttpWebSocketExports } from '../http-exports.js';

// Before any module importing node:http loads (see http-exports.ts): the worker's modules come after.
hideHttpWebSocketExports();
// Not a top-level await: the single executable's bundle is CommonJS, which has none.
import('./worker-process.js').catch((err: unknown) => {
  process.stderr.write(`proxyd: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
