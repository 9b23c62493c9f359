import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createProxyServer } from 'http-proxy-3';
import type { RouteTable } from './route-table.js';

/** Options of {@link ProxyServer}. */
export interface ProxyServerOptions {
  /** The table every request is routed with; swap it with {@link ProxyServer.setTable}. */
  table: RouteTable;
}

/** The HTTP data-plane listener: routes each request by Host to its upstream. */
export class ProxyServer {
  #table: RouteTable;
  readonly #server: http.Server;
  readonly #proxy = createProxyServer({ xfwd: true });
  readonly #agent = new http.Agent({ keepAlive: true });

  constructor(options: ProxyServerOptions) {
    this.#table = options.table;
    this.#proxy.on('error', (_err, _req, res) => {
      if (res instanceof http.ServerResponse && !res.headersSent) {
        res.writeHead(502, { 'content-type': 'text/plain; charset=utf-8' }).end('bad gateway\n');
      } else res.destroy();
    });
    this.#server = http.createServer((req, res) => this.#handle(req, res));
  }

  /** Replaces the route table; requests in flight finish on the old one. */
  setTable(table: RouteTable): void {
    this.#table = table;
  }

  /** Listens on host:port (port 0 picks a free one) and resolves the bound address. */
  listen(port: number, host = '127.0.0.1'): Promise<AddressInfo> {
    return new Promise((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(port, host, () => resolve(this.#server.address() as AddressInfo));
    });
  }

  /** Stops listening and closes idle connections. */
  close(): Promise<void> {
    return new Promise((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeIdleConnections();
      this.#agent.destroy();
    });
  }

  #handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const route = this.#table.match(req.headers.host);
    const handler = route?.site.handler;
    if (!route || handler?.kind !== 'reverse_proxy') {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('no route for host\n');
      return;
    }
    const upstream = handler.upstreams[0];
    if (!upstream) return void res.writeHead(502).end();
    this.#proxy.web(req, res, { target: `http://${upstream.host}:${upstream.port}`, agent: this.#agent });
  }
}
