import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { AdminClient, adminTarget } from './client.js';

describe("the admin address (the model's host:port rule)", () => {
  it.each([
    ['127.0.0.1:6190', { host: '127.0.0.1', port: 6190 }],
    ['localhost:1', { host: 'localhost', port: 1 }],
    ['Admin.Test:65535', { host: 'admin.test', port: 65535 }],
    ['[::1]:6190', { host: '::1', port: 6190 }],
  ])('accepts %s', (text, target) => {
    expect(adminTarget(text)).toEqual(target);
  });

  it.each(['6190', 'h:0', 'h:65536', 'h:06190', '::1:6190', '[::1]', 'http://h:1', 'a b:1', 'a..b:1', ''])(
    'refuses %j with the same message',
    (text) => {
      expect(() => adminTarget(text)).toThrow(`invalid admin address "${text}", expected host:port`);
      expect(() => new AdminClient({ admin: text }).request('GET', '/health')).toThrow(
        `invalid admin address "${text}", expected host:port`,
      );
    },
  );

  it('sends the request to the parsed address', async () => {
    const server = http.createServer((req, res) => res.end(`${req.method} ${req.url}`));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const res = await new AdminClient({ admin: `127.0.0.1:${port}` }).request('GET', '/health');
      expect(res).toMatchObject({ status: 200, body: 'GET /health' });
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
