import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** RFC 6455's key suffix of `Sec-WebSocket-Accept`. */
const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

/** A WebSocket upstream started by {@link startWebSocketUpstream}. */
export interface WebSocketUpstream {
  port: number;
  /** WebSockets open on it now. */
  readonly open: number;
  close(): Promise<void>;
}

/**
 * A WebSocket echo server on 127.0.0.1 (RFC 6455, the subset a browser or
 * Node's `WebSocket` uses: unfragmented text frames, ping, close): each text
 * message comes back as `<tag>:<message>`, so a test sees which upstream a
 * connection is on. Written here because the repository has no WebSocket
 * server dependency; the client in the tests is Node's own `WebSocket`.
 */
export async function startWebSocketUpstream(tag: string): Promise<WebSocketUpstream> {
  const sockets = new Set<Socket>();
  const server = http.createServer((_req, res) => res.writeHead(426).end());
  server.on('upgrade', (req, socket: Socket) => {
    const key = req.headers['sec-websocket-key'];
    if (typeof key !== 'string' || req.headers.upgrade?.toLowerCase() !== 'websocket') {
      socket.end('HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n');
      return;
    }
    const accept = createHash('sha1')
      .update(key + GUID)
      .digest('base64');
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-accept: ${accept}\r\n\r\n`,
    );
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      for (;;) {
        const frame = readFrame(buffered);
        if (frame === null) return;
        buffered = buffered.subarray(frame.size);
        if (frame.opcode === 0x1) socket.write(encodeFrame(0x1, Buffer.from(`${tag}:${frame.payload.toString()}`)));
        else if (frame.opcode === 0x9) socket.write(encodeFrame(0xa, frame.payload));
        else if (frame.opcode === 0x8) {
          socket.end(encodeFrame(0x8, frame.payload));
          return;
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    get open() {
      return sockets.size;
    },
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** One whole client frame at the start of `data` (masked, as every client frame is), or null until it has arrived. */
function readFrame(data: Buffer): { opcode: number; payload: Buffer; size: number } | null {
  if (data.length < 2) return null;
  const opcode = (data[0] as number) & 0x0f;
  const masked = ((data[1] as number) & 0x80) !== 0;
  let length = (data[1] as number) & 0x7f;
  let at = 2;
  if (length === 126) {
    if (data.length < 4) return null;
    length = data.readUInt16BE(2);
    at = 4;
  } else if (length === 127) {
    if (data.length < 10) return null;
    length = Number(data.readBigUInt64BE(2));
    at = 10;
  }
  const mask = masked ? data.subarray(at, at + 4) : null;
  if (masked) at += 4;
  if (data.length < at + length) return null;
  const payload = Buffer.from(data.subarray(at, at + length));
  if (mask !== null)
    for (let i = 0; i < payload.length; i++) payload[i] = (payload[i] as number) ^ (mask[i % 4] as number);
  return { opcode, payload, size: at + length };
}

/** A final server frame (unmasked). */
function encodeFrame(opcode: number, payload: Buffer): Buffer {
  const n = payload.length;
  const head = n < 126 ? Buffer.from([0x80 | opcode, n]) : Buffer.from([0x80 | opcode, 126, n >> 8, n & 0xff]);
  return Buffer.concat([head, payload]);
}

/** A client WebSocket (Node's `WebSocket`) with its messages queued, as a test reads them. */
export interface WebSocketClient {
  socket: WebSocket;
  /** Sends `text` and resolves the next message (rejects after 5 s or when the socket closes first). */
  ask(text: string): Promise<string>;
  /** Resolves once the socket is closed (with its close code). */
  closed: Promise<number>;
}

/** Opens `url` (rejects when the handshake fails). */
export function openWebSocket(url: string): Promise<WebSocketClient> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url);
    const waiting: Array<(text: string) => void> = [];
    let closedCode: number | null = null;
    const closed = new Promise<number>((resolveClosed) => {
      socket.addEventListener('close', (event) => {
        closedCode = event.code;
        resolveClosed(event.code);
      });
    });
    socket.addEventListener('message', (event) => {
      // The echo upstream only answers: every message is the answer to the oldest question.
      waiting.shift()?.(String(event.data));
    });
    socket.addEventListener('error', () => reject(new Error(`WebSocket to ${url} failed`)));
    socket.addEventListener('open', () =>
      resolve({
        socket,
        closed,
        ask(text) {
          return new Promise<string>((resolveAsk, rejectAsk) => {
            if (closedCode !== null) {
              rejectAsk(new Error(`WebSocket closed (${closedCode})`));
              return;
            }
            const timer = setTimeout(() => rejectAsk(new Error(`no answer to ${text} within 5 s`)), 5000);
            void closed.then((code) => rejectAsk(new Error(`WebSocket closed (${code}) before answering ${text}`)));
            waiting.push((answer) => {
              clearTimeout(timer);
              resolveAsk(answer);
            });
            socket.send(text);
          });
        },
      }),
    );
  });
}
