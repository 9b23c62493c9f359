import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { listenUnixSocket } from './admin-socket.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'proxyd-sock-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

const hello: http.RequestListener = (_req, res) => res.end('hello');

function get(socketPath: string): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get({ socketPath, path: '/' }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => {
          body += c.toString();
        });
        res.on('end', () => resolve(body));
      })
      .on('error', reject);
  });
}

describe('listenUnixSocket', () => {
  it('creates a 0600 socket, serves the handler and removes the file on close', async () => {
    const p = path.join(dir, 'a.sock');
    const listener = await listenUnixSocket(p, hello);
    expect((await stat(p)).mode & 0o777).toBe(0o600);
    expect(await get(p)).toBe('hello');
    await listener.close();
    await expect(stat(p)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('hands the server to configure before it listens (listeners for what never reaches the handler)', async () => {
    const p = path.join(dir, 'c.sock');
    const seen: boolean[] = [];
    const listener = await listenUnixSocket(p, hello, {
      configure: (server) => {
        seen.push(server.listening);
        server.on('checkExpectation', (_req, res) => res.writeHead(417).end('configured'));
      },
    });
    try {
      expect(seen).toEqual([false]);
      const body = await new Promise<string>((resolve, reject) => {
        http
          .get({ socketPath: p, path: '/', headers: { expect: 'bogus' } }, (res) => {
            let text = '';
            res.on('data', (c: Buffer) => {
              text += c.toString();
            });
            res.on('end', () => resolve(`${res.statusCode} ${text}`));
          })
          .on('error', reject);
      });
      expect(body).toBe('417 configured');
    } finally {
      await listener.close();
    }
  });

  it('refuses a path that is not a socket, and leaves the file alone', async () => {
    const p = path.join(dir, 'plain');
    await writeFile(p, 'keep me');
    await expect(listenUnixSocket(p, hello)).rejects.toThrow(/exists and is not a socket/);
    expect(await readFile(p, 'utf8')).toBe('keep me');
  });

  it('refuses a socket a live server listens on', async () => {
    const p = path.join(dir, 'live.sock');
    const first = await listenUnixSocket(p, hello);
    try {
      await expect(listenUnixSocket(p, hello)).rejects.toThrow(/in use by a running process/);
      expect(await get(p)).toBe('hello');
    } finally {
      await first.close();
    }
  });
});
