// The module the primary forks per data-plane worker (see worker-process.ts).
import { hideHttpWebSocketExports } from '../http-exports.js';

// Before any module importing node:http loads (see http-exports.ts): the worker's modules come after.
hideHttpWebSocketExports();
await import('./worker-process.js');
