import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultSockets, formatDockerHost, parseDockerHost, pingSocket, resolveDockerHost } from './socket.js';

describe('parseDockerHost', () => {
  it.each([
    ['unix:///var/run/docker.sock', { kind: 'unix', path: '/var/run/docker.sock' }],
    ['/run/podman/podman.sock', { kind: 'unix', path: '/run/podman/podman.sock' }],
    ['tcp://127.0.0.1:2375', { kind: 'tcp', host: '127.0.0.1', port: 2375 }],
    ['tcp://Socket-Proxy:2375/', { kind: 'tcp', host: 'socket-proxy', port: 2375 }],
    ['tcp://[::1]:2375', { kind: 'tcp', host: '::1', port: 2375 }],
  ])('%s', (text, host) => {
    expect(parseDockerHost(text)).toEqual(host);
  });

  it.each([
    ['unix://relative.sock', 'expected unix:///<absolute path>'],
    ['tcp://127.0.0.1', 'is not host:port'],
    ['tcp://127.0.0.1:0', 'is not 1-65535'],
    ['ssh://user@host', 'expected unix:///<path>, tcp://<host>:<port> or an absolute socket path'],
    ['npipe:////./pipe/docker_engine', 'expected unix:///<path>'],
    ['docker.sock', 'expected unix:///<path>'],
  ])('%s is refused: %s', (text, why) => {
    expect(() => parseDockerHost(text)).toThrow(expect.objectContaining({ code: 'DOCKER_INVALID_HOST' }));
    expect(() => parseDockerHost(text)).toThrow(why);
  });

  it('formats for logs', () => {
    expect(formatDockerHost({ kind: 'unix', path: '/x.sock' })).toBe('unix:///x.sock');
    expect(formatDockerHost({ kind: 'tcp', host: '::1', port: 2375 })).toBe('tcp://[::1]:2375');
  });
});

describe('resolveDockerHost', () => {
  const never = async () => {
    throw new Error('must not probe');
  };

  it('an explicit host wins over DOCKER_HOST, and neither is probed', async () => {
    expect(
      await resolveDockerHost({
        explicit: 'tcp://127.0.0.1:2375',
        env: { DOCKER_HOST: 'unix:///a.sock' },
        probe: never,
      }),
    ).toEqual({
      host: { kind: 'tcp', host: '127.0.0.1', port: 2375 },
      url: 'tcp://127.0.0.1:2375',
      reason: 'explicit',
    });
    expect(await resolveDockerHost({ env: { DOCKER_HOST: 'unix:///a.sock' }, probe: never })).toEqual({
      host: { kind: 'unix', path: '/a.sock' },
      url: 'unix:///a.sock',
      reason: 'env',
    });
  });

  it('an invalid DOCKER_HOST is an error, not a silent fallback', async () => {
    await expect(resolveDockerHost({ env: { DOCKER_HOST: 'ssh://x' }, probe: never })).rejects.toMatchObject({
      code: 'DOCKER_INVALID_HOST',
    });
  });

  it('else the first default socket that answers, in order: Docker, rootless Podman, rootful Podman', async () => {
    const env = { XDG_RUNTIME_DIR: '/run/user/1000' };
    expect(defaultSockets(env)).toEqual([
      '/var/run/docker.sock',
      '/run/user/1000/podman/podman.sock',
      '/run/podman/podman.sock',
    ]);
    expect(defaultSockets({})).toEqual(['/var/run/docker.sock', '/run/podman/podman.sock']);
    const tried: string[] = [];
    const probe = async (p: string) => {
      tried.push(p);
      return p.includes('/run/user/');
    };
    expect(await resolveDockerHost({ env, probe })).toEqual({
      host: { kind: 'unix', path: '/run/user/1000/podman/podman.sock' },
      url: 'unix:///run/user/1000/podman/podman.sock',
      reason: 'probe',
    });
    expect(tried).toEqual(['/var/run/docker.sock', '/run/user/1000/podman/podman.sock']);
  });

  it('none answering → null', async () => {
    expect(await resolveDockerHost({ env: {}, probe: async () => false })).toBeNull();
  });
});

describe('pingSocket', () => {
  it('true for a socket answering /_ping 200, false for a missing socket or another status', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'ds-ping-'));
    const sock = path.join(dir, 'api.sock');
    const server = http.createServer((req, res) => {
      res.writeHead(req.url === '/_ping' ? 200 : 404).end('OK');
    });
    await new Promise<void>((resolve) => server.listen(sock, resolve));
    try {
      expect(await pingSocket(sock)).toBe(true);
      expect(await pingSocket(path.join(dir, 'missing.sock'))).toBe(false);
    } finally {
      await new Promise((resolve) => server.close(resolve));
      await rm(dir, { recursive: true, force: true });
    }
  });
});
