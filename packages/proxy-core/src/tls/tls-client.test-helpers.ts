// Test helpers: real TLS clients on loopback (not shipped: see package.json "files").
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http2 from 'node:http2';
import tls, { type SecureVersion, type TLSSocket } from 'node:tls';
import { onCleanup } from '../loopback.test-helpers.js';

/** What one finished handshake showed the client. */
export interface Handshake {
  /** The negotiated application protocol; false when none was. */
  alpn: string | false;
  /** SHA-256 fingerprint of the server's leaf certificate ('' when none was sent: a resumed session). */
  fingerprint: string;
  /** `TLSv1.3` or `TLSv1.2`. */
  version: string | null;
  reused: boolean;
  /**
   * The first session the server gave (TLS 1.2: with the handshake; TLS
   * 1.3: a ticket after it, so read an answer first).
   */
  session: Promise<Buffer>;
  /** The open connection, destroyed after the test. */
  socket: TLSSocket;
}

/** Options of {@link handshake}. */
export interface HandshakeRequest {
  /** SNI; default none. */
  servername?: string;
  /** ALPN offer; default none. */
  alpn?: string[];
  /** Both the lowest and the highest version offered; default the client's (1.2 to 1.3). */
  version?: SecureVersion;
  /** A session to resume. */
  session?: Buffer;
  /** The suites offered (OpenSSL names, TLS 1.2 and below); default the client's. */
  ciphers?: string;
}

/**
 * Opens a TLS connection to 127.0.0.1:`port` without verifying the
 * certificate; resolves when the handshake finished, rejects with the
 * client's error (its `code` names the alert, e.g.
 * `ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE`).
 */
export function handshake(port: number, request: HandshakeRequest = {}): Promise<Handshake> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({
      host: '127.0.0.1',
      port,
      rejectUnauthorized: false,
      ...(request.servername === undefined ? {} : { servername: request.servername }),
      ...(request.alpn === undefined ? {} : { ALPNProtocols: request.alpn }),
      ...(request.version === undefined ? {} : { minVersion: request.version, maxVersion: request.version }),
      ...(request.session === undefined ? {} : { session: request.session }),
      ...(request.ciphers === undefined ? {} : { ciphers: request.ciphers }),
    });
    onCleanup(() => {
      socket.destroy();
    });
    const session = new Promise<Buffer>((resolve) => socket.once('session', resolve));
    socket.once('secureConnect', () =>
      resolve({
        alpn: socket.alpnProtocol ?? false,
        fingerprint: socket.getPeerCertificate().fingerprint256 ?? '',
        version: socket.getProtocol(),
        reused: socket.isSessionReused(),
        session,
        socket,
      }),
    );
    socket.once('error', reject);
  });
}

/**
 * One HTTP/1.1 GET on an open TLS connection (keep-alive): resolves with
 * the raw response once its body (Content-Length, or chunked up to the last
 * chunk) has arrived.
 */
export function getOver(socket: TLSSocket, host: string, path = '/'): Promise<string> {
  return new Promise((resolve, reject) => {
    let data = '';
    const onData = (chunk: Buffer) => {
      data += chunk.toString('latin1');
      const end = data.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = data.slice(0, end);
      if (/\r\ntransfer-encoding: *chunked/i.test(head)) {
        if (!data.endsWith('\r\n0\r\n\r\n')) return;
      } else if (data.length - end - 4 < Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0)) return;
      socket.off('data', onData);
      socket.off('error', reject);
      resolve(data);
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.write(`GET ${path} HTTP/1.1\r\nhost: ${host}\r\n\r\n`);
  });
}

/**
 * The TLS alert number a failed client handshake received (40
 * handshake_failure, 120 no_application_protocol), from OpenSSL's message
 * (its error code names differ between OpenSSL versions); null for none.
 */
export async function alertOf(attempt: Promise<unknown>): Promise<number | null> {
  try {
    await attempt;
  } catch (err) {
    const match = /SSL alert number (\d+)/.exec(err instanceof Error ? err.message : String(err));
    return match === null ? null : Number(match[1]);
  }
  throw new Error('the handshake succeeded');
}

/**
 * Resolves once the peer closed `socket` (its end or a close); the client
 * itself writes nothing.
 */
export function closedByPeer(socket: TLSSocket): Promise<void> {
  return new Promise((resolve) => {
    if (socket.destroyed || socket.readableEnded) {
      resolve();
      return;
    }
    socket.once('end', () => resolve());
    socket.once('close', () => resolve());
    socket.resume();
  });
}

/** The SHA-256 fingerprint of a PEM certificate file, as `getPeerCertificate` spells it. */
export function fingerprintOf(certFile: string): string {
  return new X509Certificate(readFileSync(certFile)).fingerprint256;
}

/**
 * Runs `openssl s_client` against 127.0.0.1:`port` with stdin closed at
 * once; resolves with its stdout and stderr together (it exits with an
 * error status when the handshake fails: that is output too).
 */
export function opensslClient(port: number, args: string[]): Promise<string> {
  return new Promise((resolve) => {
    const child = execFile(
      'openssl',
      ['s_client', '-connect', `127.0.0.1:${port}`, ...args],
      { encoding: 'utf8', timeout: 10_000 },
      (_err, stdout, stderr) => resolve(`${stdout}\n${stderr}`),
    );
    child.stdin?.end();
  });
}

/** One HTTP/2 answer as {@link h2Request} read it. */
export interface H2Reply {
  status: number;
  /** Response headers, pseudo-headers included (`:status`). */
  headers: http2.IncomingHttpHeaders;
  body: string;
  /** The ALPN protocol the session negotiated (`h2`). */
  alpn: string | undefined;
}

/** Options of {@link h2Request}. */
export interface H2RequestOptions {
  /** SNI and `:authority` (with the port unless `authority` says otherwise). */
  servername: string;
  path?: string;
  method?: string;
  /** Extra request headers. */
  headers?: http2.OutgoingHttpHeaders;
  /** A request body (ends the stream after it). */
  body?: string;
  /** `:authority`; default `<servername>:<port>`. */
  authority?: string;
  /** A session to reuse (default a new one, closed after the answer). */
  session?: http2.ClientHttp2Session;
}

/** Opens an HTTP/2 session to 127.0.0.1:`port` (SNI `servername`, certificate not verified); closed after the test. */
export function h2Session(port: number, servername: string): http2.ClientHttp2Session {
  const session = http2.connect(`https://127.0.0.1:${port}`, { servername, rejectUnauthorized: false });
  session.on('error', () => {});
  onCleanup(() => {
    session.destroy();
  });
  return session;
}

/** One HTTP/2 request over TLS to 127.0.0.1:`port` (node:http2 client, certificate not verified). */
export function h2Request(port: number, options: H2RequestOptions): Promise<H2Reply> {
  const session = options.session ?? h2Session(port, options.servername);
  return new Promise((resolve, reject) => {
    const stream = session.request({
      ':method': options.method ?? 'GET',
      ':path': options.path ?? '/',
      ':authority': options.authority ?? `${options.servername}:${port}`,
      ...options.headers,
    });
    let headers: http2.IncomingHttpHeaders = {};
    let body = '';
    stream.setEncoding('utf8');
    stream.on('response', (h) => {
      headers = h;
    });
    stream.on('data', (chunk: string) => {
      body += chunk;
    });
    stream.on('end', () => {
      const alpn = session.alpnProtocol;
      if (options.session === undefined) session.close();
      resolve({ status: Number(headers[':status'] ?? 0), headers, body, alpn });
    });
    stream.on('error', reject);
    if (options.body !== undefined) stream.end(options.body);
    else stream.end();
  });
}
