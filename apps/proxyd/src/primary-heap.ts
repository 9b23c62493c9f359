// Imported first by main.ts, before any other module loads: `proxyd run`
// replaces itself (same pid, same file descriptors) with a Node whose young
// generation is capped (see `primaryReexecArgs`). Node's `process.execve`
// (Unix) does it without a second process; elsewhere nothing happens.
import { isSea } from 'node:sea';
import { mallocEnv, primaryReexecArgs } from './heap-tuning.js';

const args = primaryReexecArgs(process.argv, process.execArgv, process.env.NODE_OPTIONS ?? '', isSea());
if (args !== null && typeof process.execve === 'function') {
  process.execve(process.execPath, [process.execPath, ...args], mallocEnv());
}
