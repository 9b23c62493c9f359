import net from 'node:net';
import { parse } from '@proxyd/proxyfile';
import { describe, expect, it } from 'vitest';
import { demoProxyfile, fallbackLines, pickPort } from './demo.js';

function listen(port: number): Promise<net.Server> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

describe('proxyd demo', () => {
  it('takes the preferred port when free, else the next free one, and says so', async () => {
    const busy = await listen(0);
    const port = (busy.address() as net.AddressInfo).port;
    try {
      const picked = await pickPort(port);
      expect(picked.preferred).toBe(port);
      expect(picked.port).not.toBe(port);
      expect(fallbackLines({ HTTP: picked, admin: { preferred: 6190, port: 6190 } })).toBe(
        `HTTP port ${port} is busy, using ${picked.port}\n`,
      );
    } finally {
      busy.close();
    }
    // Freed: taken as it is.
    expect(await pickPort(port)).toEqual({ preferred: port, port });
  });

  it('runs a Proxyfile that parses: both loopback names in front of the demo page', () => {
    const config = parse(demoProxyfile(8080, 6190, 3000));
    expect(config.global).toMatchObject({ http_port: 8080, admin: '127.0.0.1:6190' });
    expect(config.sites).toHaveLength(1);
    expect(JSON.stringify(config.sites[0])).toContain('"port":3000');
  });
});
