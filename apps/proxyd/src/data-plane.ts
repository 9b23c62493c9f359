import { type Config, type DataPlaneHooks, ProxyServer, type RouteSpec, RouteTable } from '@proxyd/proxy-core';

/** The running data plane, as the rest of the daemon sees it. */
export interface DataPlane {
  /** Where the HTTP listener is bound. */
  httpAddress: { host: string; port: number };
  /** Publishes a new route set; requests in flight finish on the old table. */
  setRoutes(routes: readonly RouteSpec[], version: number): void;
  close(): Promise<void>;
}

/** Starts the HTTP (and later HTTPS) listeners of the data plane. */
export async function startDataPlane(
  config: Config,
  routes: readonly RouteSpec[],
  _hooks: DataPlaneHooks,
): Promise<DataPlane> {
  const proxy = new ProxyServer({ table: new RouteTable(routes, 1) });
  const http = await proxy.listen(config.global.http_port, '0.0.0.0');
  return {
    httpAddress: { host: http.address, port: http.port },
    setRoutes: (next, version) => proxy.setTable(new RouteTable(next, version)),
    close: () => proxy.close(),
  };
}
