import http from 'node:http';
import { parseHostPort } from '@proxyd/model';
import { DockerErrorCode, DockerSourceError } from '../errors.js';

/** Where the runtime's Engine API listens. */
export type DockerHost = { kind: 'unix'; path: string } | { kind: 'tcp'; host: string; port: number };

/** The host chosen by {@link resolveDockerHost}, and why. */
export interface ResolvedDockerHost {
  host: DockerHost;
  /** `unix:///var/run/docker.sock` or `tcp://127.0.0.1:2375`: the text to log. */
  url: string;
  /** `explicit` (`--docker-host`), `env` (`DOCKER_HOST`) or `probe` (the first default socket that answered `/_ping`). */
  reason: 'explicit' | 'env' | 'probe';
}

/** Options of {@link resolveDockerHost}. */
export interface ResolveDockerHostOptions {
  /** `--docker-host`: `unix://<path>`, `tcp://<host>:<port>` or an absolute path; used as given, not probed. */
  explicit?: string | null | undefined;
  /** The environment read for `DOCKER_HOST` and `XDG_RUNTIME_DIR` (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  /** Whether a socket answers `/_ping` (default: a real request, {@link pingSocket}). */
  probe?: (path: string) => Promise<boolean>;
}

/**
 * Parses `unix:///run/x.sock`, `tcp://127.0.0.1:2375` or a bare absolute
 * path. The TCP address goes through the model's `host:port` rule. Throws
 * `DOCKER_INVALID_HOST` (ssh:// and npipe:// are not supported).
 */
export function parseDockerHost(text: string): DockerHost {
  const bad = (why: string) =>
    new DockerSourceError(DockerErrorCode.INVALID_HOST, `docker host ${JSON.stringify(text)}: ${why}`);
  if (text.startsWith('unix://')) {
    const path = text.slice('unix://'.length);
    if (!path.startsWith('/')) throw bad('expected unix:///<absolute path>');
    return { kind: 'unix', path };
  }
  if (text.startsWith('tcp://')) {
    const address = text.slice('tcp://'.length).replace(/\/$/, '');
    const parsed = parseHostPort(address);
    if (!parsed.ok) throw bad(`the address ${parsed.problem} (expected tcp://<host>:<port>)`);
    return { kind: 'tcp', host: parsed.value.host, port: parsed.value.port };
  }
  if (text.startsWith('/')) return { kind: 'unix', path: text };
  throw bad('expected unix:///<path>, tcp://<host>:<port> or an absolute socket path');
}

/** The text of a host for logs: `unix://<path>` or `tcp://<host>:<port>`. */
export function formatDockerHost(host: DockerHost): string {
  if (host.kind === 'unix') return `unix://${host.path}`;
  return `tcp://${host.host.includes(':') ? `[${host.host}]` : host.host}:${host.port}`;
}

/**
 * The default sockets, in the order they are tried: Docker's, rootless
 * Podman's (`$XDG_RUNTIME_DIR/podman/podman.sock`, when the variable is
 * set), rootful Podman's.
 */
export function defaultSockets(env: NodeJS.ProcessEnv = process.env): string[] {
  const xdg = env.XDG_RUNTIME_DIR;
  return [
    '/var/run/docker.sock',
    ...(xdg?.startsWith('/') ? [`${xdg.replace(/\/$/, '')}/podman/podman.sock`] : []),
    '/run/podman/podman.sock',
  ];
}

/** Whether `GET /_ping` on the unix socket `path` answers 200 within `timeoutMs` (default 1000). */
export function pingSocket(path: string, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.get({ socketPath: path, path: '/_ping', timeout: timeoutMs, agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
  });
}

/**
 * Which runtime to watch: `explicit` (`--docker-host`) else `DOCKER_HOST`,
 * both used as given; else the first of {@link defaultSockets} that answers
 * `/_ping`. Null when none answers (the caller logs one info line: no
 * discovery, not an error). Throws `DOCKER_INVALID_HOST` for an explicit
 * or `DOCKER_HOST` value that does not parse.
 */
export async function resolveDockerHost(options: ResolveDockerHostOptions = {}): Promise<ResolvedDockerHost | null> {
  const env = options.env ?? process.env;
  const given = options.explicit ? { text: options.explicit, reason: 'explicit' as const } : null;
  const fromEnv = env.DOCKER_HOST ? { text: env.DOCKER_HOST, reason: 'env' as const } : null;
  const chosen = given ?? fromEnv;
  if (chosen) {
    const host = parseDockerHost(chosen.text);
    return { host, url: formatDockerHost(host), reason: chosen.reason };
  }
  const probe = options.probe ?? ((path: string) => pingSocket(path));
  for (const path of defaultSockets(env)) {
    if (await probe(path)) {
      const host: DockerHost = { kind: 'unix', path };
      return { host, url: formatDockerHost(host), reason: 'probe' };
    }
  }
  return null;
}
