/**
 * Keeps Node's bundled undici (fetch, WebSocket) unloaded in a process that
 * never uses it.
 *
 * node:http's exports include three lazy getters, `WebSocket`, `CloseEvent`
 * and `MessageEvent`, that load undici when read. An ES module importing
 * node:http (`import http from 'node:http'`, or any named import) makes Node
 * build the builtin's module namespace, which reads every enumerable export:
 * the first such import loads undici, ~12 MB RSS and 6 MB of private memory
 * in a bare Node 24 process, in every proxyd process (bench/memory, issue
 * 32; `require('node:http')` does not). Made non-enumerable, the getters stay
 * out of the namespace and `http.WebSocket` still loads undici when read.
 *
 * Node builds a builtin's namespace when it loads the module graph that
 * imports it, before that graph runs: this has to run in a module whose
 * graph has no node:http, ahead of a dynamic `import()` of the rest (main.ts,
 * cluster/worker.ts). A bundle that hoists node:http into its entry loads
 * undici as before.
 */
export function hideHttpWebSocketExports(): void {
  const http = process.getBuiltinModule('node:http');
  for (const name of ['WebSocket', 'CloseEvent', 'MessageEvent']) {
    const descriptor = Object.getOwnPropertyDescriptor(http, name);
    if (descriptor?.enumerable) Object.defineProperty(http, name, { ...descriptor, enumerable: false });
  }
}
