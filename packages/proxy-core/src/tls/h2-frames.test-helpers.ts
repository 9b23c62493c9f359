// Test helpers: an HTTP/2 client that writes and reads raw frames (not shipped: see package.json "files").
import tls from 'node:tls';
import { expect } from 'vitest';
import { onCleanup, wait } from '../loopback.test-helpers.js';

// Frame types (RFC 9113 §6).
export const DATA = 0x0;
export const HEADERS = 0x1;
export const PRIORITY = 0x2;
export const RST_STREAM = 0x3;
export const SETTINGS = 0x4;
export const PING = 0x6;
export const GOAWAY = 0x7;
export const WINDOW_UPDATE = 0x8;
// Flags.
export const ACK = 0x1;
export const END_STREAM = 0x1;
export const END_HEADERS = 0x4;
// Error codes (RFC 9113 §7).
export const PROTOCOL_ERROR = 0x1;
export const FLOW_CONTROL_ERROR = 0x3;
export const STREAM_CLOSED = 0x5;
export const CANCEL = 0x8;

/** One frame as read. */
export interface Frame {
  type: number;
  flags: number;
  stream: number;
  payload: Buffer;
}

/** One frame as written: the 9-byte header and `payload`. */
export function frame(type: number, flags: number, stream: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(stream, 5);
  return Buffer.concat([head, payload]);
}

/** GET `/` for `authority`: `:method GET`, `:scheme https`, `:path /` indexed, `:authority` a literal without indexing. */
export function getRequest(authority: string): Buffer {
  return Buffer.concat([Buffer.from([0x82, 0x87, 0x84, 0x01, authority.length]), Buffer.from(authority)]);
}

/** POST `/` for `authority` with `content-length` (a literal without indexing, new name). */
export function postRequest(authority: string, contentLength: number): Buffer {
  const length = String(contentLength);
  return Buffer.concat([
    Buffer.from([0x83, 0x87, 0x84, 0x01, authority.length]),
    Buffer.from(authority),
    Buffer.from([0x00, 'content-length'.length]),
    Buffer.from('content-length'),
    Buffer.from([length.length]),
    Buffer.from(length),
  ]);
}

/**
 * A client that speaks HTTP/2 frame by frame over TLS (ALPN h2): it sends
 * the preface and an empty SETTINGS, acknowledges every SETTINGS the
 * server sends (RFC 9113 §6.5.3), and keeps every frame it reads.
 */
export class RawH2Client {
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

  /**
   * Sends GET `/` on `stream` (END_STREAM) and waits for the end of its
   * answer: the server has then handled every frame sent before it.
   */
  async served(stream: number, authority: string): Promise<void> {
    this.send(frame(HEADERS, END_STREAM | END_HEADERS, stream, getRequest(authority)));
    await this.next(
      (f) => f.stream === stream && (f.type === DATA || f.type === HEADERS) && (f.flags & END_STREAM) !== 0,
    );
  }

  /** The RST_STREAM and GOAWAY frames read so far, as `type:stream:code`. */
  errors(): string[] {
    return this.frames
      .filter((f) => f.type === RST_STREAM || f.type === GOAWAY)
      .map(
        (f) =>
          `${f.type === GOAWAY ? 'GOAWAY' : 'RST_STREAM'}:${f.stream}:${f.payload.readUInt32BE(f.type === GOAWAY ? 4 : 0)}`,
      );
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
