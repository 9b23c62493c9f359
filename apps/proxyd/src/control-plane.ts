import { createAdminApp } from '@proxyd/admin-api';
import { type Config, DEFAULTS } from '@proxyd/proxy-core';

/** The admin listeners and everything they drive. */
export interface ControlPlane {
  adminAddress: { host: string; port: number };
  close(): Promise<void>;
}

/** Splits `host:port` (IPv6 in brackets); port 0 asks the OS for a free one. */
export function splitHostPort(value: string): { host: string; port: number } {
  const m = /^(?:\[([0-9a-fA-F:]+)\]|([^:]+)):(\d{1,5})$/.exec(value);
  const port = Number(m?.[3]);
  if (!m || port > 65535) throw new Error(`invalid listen address "${value}", expected host:port`);
  return { host: (m[1] ?? m[2]) as string, port };
}

/** Starts the admin API on TCP. */
export async function startControlPlane(config: Config, adminOverride: string | undefined): Promise<ControlPlane> {
  const admin = splitHostPort(adminOverride ?? config.global.admin ?? DEFAULTS.admin);
  const app = createAdminApp();
  await app.listen({ host: admin.host, port: admin.port });
  const bound = app.server.address();
  return {
    adminAddress: { host: admin.host, port: typeof bound === 'object' && bound ? bound.port : admin.port },
    close: () => app.close(),
  };
}
