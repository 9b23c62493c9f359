import { readFileSync } from 'node:fs';
import type { RouteSpec } from '@proxyd/model';
import { describe, expect, it } from 'vitest';
import type { ProxyServerOptions } from '../data-plane/proxy-server.js';
import { selfSigned, site, siteProxy, upstream, wait } from '../loopback.test-helpers.js';
import { MemoryCertificateStore } from './certificate-store.js';
import {
  ACK,
  DATA,
  END_HEADERS,
  END_STREAM,
  type Frame,
  frame,
  GOAWAY,
  getRequest,
  HEADERS,
  PING,
  PROTOCOL_ERROR,
  postRequest,
  RawH2Client,
  RST_STREAM,
} from './h2-frames.test-helpers.js';
import { SETTINGS_PROBE_MS } from './http2.js';

// HTTP/2 conformance of the HTTPS listener where proxyd, not nghttp2,
// decides (issue 28; h2spec 2.6.0 numbers in the proxy-core README): each
// test writes the frames h2spec would and reads the server's frames.

async function httpsProxy(routes: RouteSpec[], options: Omit<ProxyServerOptions, 'routes' | 'certificates'> = {}) {
  const store = new MemoryCertificateStore();
  for (const route of routes) {
    const files = selfSigned([route.domain]);
    store.set(route.domain, { cert: readFileSync(files.cert), key: readFileSync(files.key) });
  }
  const { server } = await siteProxy(routes, { ...options, certificates: store });
  const { port } = await server.listenHttps(0);
  return port;
}

const pingAck = (data: string) => frame(PING, ACK, 0, Buffer.from(data.padEnd(8).slice(0, 8)));
const isPingAck = (data: string) => (f: Frame) =>
  f.type === PING && (f.flags & ACK) !== 0 && f.payload.toString() === data.padEnd(8).slice(0, 8);

describe('HTTP/2 conformance (issue 28)', () => {
  it('h2spec 6.7/2: an unsolicited PING ACK is ignored; the session answers a PING and a request after it', async () => {
    const up = await upstream();
    const port = await httpsProxy([site('a.test', [up.port])]);
    const client = await RawH2Client.connect(port, 'a.test');
    client.send(pingAck('stray'));
    client.send(frame(PING, 0, 0, Buffer.from('h2spec  ')));
    await client.next(isPingAck('h2spec'));
    client.send(frame(HEADERS, END_STREAM | END_HEADERS, 1, getRequest('a.test')));
    const body = await client.next((f) => f.type === DATA && f.stream === 1 && f.payload.length > 0);
    expect(body.payload.toString()).toBe('hello');
    // Well after the probe's deadline: the session is still open, no GOAWAY.
    await wait(SETTINGS_PROBE_MS + 200);
    expect(client.closed).toBe(false);
    expect(client.frames.some((f) => f.type === GOAWAY)).toBe(false);
    expect(up.urls).toEqual(['/']);
  });

  it('unsolicited PING ACKs beyond maxSessionInvalidFrames end the session', async () => {
    const up = await upstream();
    const port = await httpsProxy([site('a.test', [up.port])], { http2: { maxSessionInvalidFrames: 3 } });
    const client = await RawH2Client.connect(port, 'a.test');
    for (let i = 0; i < 3; i++) {
      client.send(pingAck(`stray${i}`));
      client.send(frame(PING, 0, 0, Buffer.from(`live${i}`.padEnd(8))));
      await client.next(isPingAck(`live${i}`));
    }
    client.send(pingAck('stray3'));
    expect(await client.closedWithin(1000)).toBe(true);
  });

  it('h2spec 8.1.2.6/1: a body longer than its content-length resets that stream only; the session serves the next request', async () => {
    const up = await upstream();
    const port = await httpsProxy([site('a.test', [up.port])]);
    const client = await RawH2Client.connect(port, 'a.test');
    client.send(frame(HEADERS, END_HEADERS, 1, postRequest('a.test', 1)));
    client.send(frame(DATA, END_STREAM, 1, Buffer.from('xx')));
    const rst = await client.next((f) => f.type === RST_STREAM && f.stream === 1);
    expect(rst.payload.readUInt32BE(0)).toBe(PROTOCOL_ERROR);
    await client.served(3, 'a.test');
    await wait(SETTINGS_PROBE_MS + 200);
    expect(client.errors()).toEqual(['RST_STREAM:1:1']);
    expect(client.closed).toBe(false);
  });

  it('h2spec 5.4.1/1: a frame nghttp2 rejects (PING on stream 3) still gets GOAWAY PROTOCOL_ERROR and the connection closes', async () => {
    const up = await upstream();
    const port = await httpsProxy([site('a.test', [up.port])]);
    const client = await RawH2Client.connect(port, 'a.test');
    client.send(frame(PING, 0, 3, Buffer.alloc(8)));
    const goaway = await client.next((f) => f.type === GOAWAY);
    expect(goaway.payload.readUInt32BE(4)).toBe(PROTOCOL_ERROR);
    // At once, not when the SETTINGS sent on the error would have expired:
    // Node's second report of the error (nghttp2 terminated) ends it.
    expect(await client.closedWithin(SETTINGS_PROBE_MS / 2)).toBe(true);
    expect(client.frames.slice(client.frames.indexOf(goaway) + 1)).toEqual([]);
  });
});
