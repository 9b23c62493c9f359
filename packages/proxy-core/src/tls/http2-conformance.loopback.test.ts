import { readFileSync } from 'node:fs';
import tls from 'node:tls';
import { describe, expect, it } from 'vitest';
import { onCleanup, selfSigned, site, siteProxy, upstream, wait } from '../loopback.test-helpers.js';
import type { RouteSpec } from '../model/index.js';
import type { ProxyServerOptions } from '../proxy-server.js';
import { MemoryCertificateStore } from './certificate-store.js';
import { SETTINGS_PROBE_MS } from './http2.js';

// HTTP/2 conformance of the HTTPS listener where proxyd, not nghttp2,
// decides (issue 28; h2spec 2.6.0 numbers in the proxy-core README): each
// test writes the frames h2spec would and reads the server's frames.

const DATA = 0x0;
const HEADERS = 0x1;
const SETTINGS = 0x4;
const PING = 0x6;
const GOAWAY = 0x7;
const ACK = 0x1;
const END_STREAM = 0x1;
const END_HEADERS = 0x4;
const PROTOCOL_ERROR = 0x1;

interface Frame {
  type: number;
  flags: number;
  stream: number;
  payload: Buffer;
}

function frame(type: number, flags: number, stream: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(stream, 5);
  return Buffer.concat([head, payload]);
}

/** GET `/` for `authority`: `:method GET`, `:scheme https`, `:path /` indexed, `:authority` a literal without indexing. */
function getRequest(authority: string): Buffer {
  return Buffer.concat([Buffer.from([0x82, 0x87, 0x84, 0x01, authority.length]), Buffer.from(authority)]);
}

/**
 * A client that speaks HTTP/2 frame by frame over TLS (ALPN h2): it sends
 * the preface and an empty SETTINGS, acknowledges every SETTINGS the
 * server sends (RFC 9113 §6.5.3), and keeps every frame it reads.
 */
class RawH2Client {
  readonly frames: Frame[] = [];
  closed = false;
  readonly #socket: tls.TLSSocket;
  #buffer = Buffer.alloc(0);
  #waiters: (() => void)[] = [];

  private constructor(socket: tls.TLSSocket) {
    this.#socket = socket;
    socket.on('data', (chunk: Buffer) => this.#read(chunk));
    socket.on('error', () => {});
    socket.on('close', () => {
      this.closed = true;
      this.#wake();
    });
  }

  static async connect(port: number, servername: string): Promise<RawH2Client> {
    const socket = tls.connect({
      port,
      host: '127.0.0.1',
      servername,
      ALPNProtocols: ['h2'],
      rejectUnauthorized: false,
    });
    onCleanup(() => {
      socket.destroy();
    });
    await new Promise<void>((resolve, reject) => {
      socket.once('secureConnect', () => resolve());
      socket.once('error', reject);
    });
    expect(socket.alpnProtocol).toBe('h2');
    const client = new RawH2Client(socket);
    socket.write(Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'));
    socket.write(frame(SETTINGS, 0, 0));
    await client.next((f) => f.type === SETTINGS && (f.flags & ACK) !== 0);
    return client;
  }

  send(bytes: Buffer): void {
    this.#socket.write(bytes);
  }

  /** The first frame read (now or later) that matches; rejects when the connection closes first or after `ms`. */
  async next(match: (f: Frame) => boolean, ms = 3000): Promise<Frame> {
    const deadline = Date.now() + ms;
    for (;;) {
      const found = this.frames.find(match);
      if (found !== undefined) return found;
      if (this.closed) throw new Error(`connection closed; frames: ${this.describe()}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no such frame within ${ms} ms; frames: ${this.describe()}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** Resolves true once the server closed the connection, false after `ms`. */
  async closedWithin(ms: number): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (!this.closed && Date.now() < deadline) await wait(20);
    return this.closed;
  }

  describe(): string {
    return this.frames.map((f) => `type ${f.type} flags ${f.flags} stream ${f.stream}`).join(', ');
  }

  #read(chunk: Buffer): void {
    this.#buffer = Buffer.concat([this.#buffer, chunk]);
    while (this.#buffer.length >= 9) {
      const length = this.#buffer.readUIntBE(0, 3);
      if (this.#buffer.length < 9 + length) break;
      const f: Frame = {
        type: this.#buffer[3] as number,
        flags: this.#buffer[4] as number,
        stream: this.#buffer.readUInt32BE(5) & 0x7fffffff,
        payload: this.#buffer.subarray(9, 9 + length),
      };
      this.#buffer = this.#buffer.subarray(9 + length);
      this.frames.push(f);
      if (f.type === SETTINGS && (f.flags & ACK) === 0) this.send(frame(SETTINGS, ACK, 0));
    }
    this.#wake();
  }

  #wake(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }
}

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

  it('h2spec 5.4.1/1: a frame nghttp2 rejects (PING on stream 3) still gets GOAWAY PROTOCOL_ERROR and the connection closes', async () => {
    const up = await upstream();
    const port = await httpsProxy([site('a.test', [up.port])]);
    const client = await RawH2Client.connect(port, 'a.test');
    client.send(frame(PING, 0, 3, Buffer.alloc(8)));
    const goaway = await client.next((f) => f.type === GOAWAY);
    expect(goaway.payload.readUInt32BE(4)).toBe(PROTOCOL_ERROR);
    expect(await client.closedWithin(SETTINGS_PROBE_MS + 1000)).toBe(true);
  });
});
