import { randomInt } from 'node:crypto';
import dgram from 'node:dgram';
import net, { isIPv6 } from 'node:net';
import * as dnsPacket from 'dns-packet';

/** A DNS server to ask: host (IP address or name) and port. */
export interface DnsServer {
  host: string;
  port: number;
}

/** A decoded DNS message (dns-packet's shape). */
export type DnsMessage = dnsPacket.Packet & { rcode?: string; flag_aa?: boolean; flag_tc?: boolean };

/** Default wait for one answer from one server, ms. */
export const DNS_QUERY_TIMEOUT_MS = 5_000;

/**
 * Parses `host`, `host:port`, `[v6]`, `[v6]:port` or a bare IPv6 address;
 * `defaultPort` when none is given. Throws a `TypeError` naming the text.
 */
export function parseDnsServer(text: string, defaultPort = 53): DnsServer {
  const trimmed = text.trim();
  let host = trimmed;
  let port: string | undefined;
  const bracket = /^\[([^\]]+)\](?::(\d+))?$/.exec(trimmed);
  if (bracket !== null) {
    host = bracket[1] ?? '';
    port = bracket[2];
  } else if (!isIPv6(trimmed)) {
    const colon = trimmed.lastIndexOf(':');
    if (colon >= 0) {
      host = trimmed.slice(0, colon);
      port = trimmed.slice(colon + 1);
    }
  }
  const number = port === undefined ? defaultPort : Number(port);
  if (host === '' || /\s/.test(host) || !Number.isInteger(number) || number < 1 || number > 65535) {
    throw new TypeError(`"${text}" is not a DNS server (host, host:port or [ipv6]:port)`);
  }
  return { host, port: number };
}

/** `host:port` (`[v6]:port`) for messages. */
export function formatDnsServer(server: DnsServer): string {
  return isIPv6(server.host) ? `[${server.host}]:${server.port}` : `${server.host}:${server.port}`;
}

/** A fresh 16-bit message id. */
export function messageId(): number {
  return randomInt(0, 0x10000);
}

/**
 * Sends `message` to `server` and resolves with the raw answer whose id
 * matches. UDP first; an answer with TC (truncated) is asked again over TCP,
 * and `tcp: true` goes to TCP at once (updates, which must not be retried
 * by a lost datagram being resent). Rejects after `timeoutMs` with an error
 * naming the server.
 */
export async function exchange(
  server: DnsServer,
  message: Buffer,
  options: { timeoutMs?: number; tcp?: boolean } = {},
): Promise<Buffer> {
  const timeoutMs = options.timeoutMs ?? DNS_QUERY_TIMEOUT_MS;
  if (options.tcp) return exchangeTcp(server, message, timeoutMs);
  const answer = await exchangeUdp(server, message, timeoutMs);
  // TC is bit 9 of the flags word.
  if ((answer.readUInt16BE(2) & 0x0200) !== 0) return exchangeTcp(server, message, timeoutMs);
  return answer;
}

function exchangeUdp(server: DnsServer, message: Buffer, timeoutMs: number): Promise<Buffer> {
  const id = message.readUInt16BE(0);
  return new Promise((resolve, reject) => {
    const socket = dgram.createSocket(isIPv6(server.host) ? 'udp6' : 'udp4');
    const timer = setTimeout(
      () => done(new Error(`no answer from ${formatDnsServer(server)} within ${timeoutMs} ms`)),
      timeoutMs,
    );
    const done = (err: Error | null, answer?: Buffer) => {
      clearTimeout(timer);
      socket.close();
      if (err !== null) reject(err);
      else resolve(answer as Buffer);
    };
    socket.on('error', (err) => done(new Error(`${formatDnsServer(server)}: ${err.message}`)));
    socket.on('message', (answer) => {
      // A stray or spoofed datagram with another id is not the answer.
      if (answer.length >= 12 && answer.readUInt16BE(0) === id) done(null, answer);
    });
    socket.send(message, server.port, server.host, (err) => {
      if (err) done(new Error(`${formatDnsServer(server)}: ${err.message}`));
    });
  });
}

function exchangeTcp(server: DnsServer, message: Buffer, timeoutMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: server.host, port: server.port });
    let received = Buffer.alloc(0);
    const timer = setTimeout(
      () => done(new Error(`no answer from ${formatDnsServer(server)} within ${timeoutMs} ms`)),
      timeoutMs,
    );
    const done = (err: Error | null, answer?: Buffer) => {
      clearTimeout(timer);
      socket.destroy();
      if (err !== null) reject(err);
      else resolve(answer as Buffer);
    };
    socket.on('error', (err) => done(new Error(`${formatDnsServer(server)}: ${err.message}`)));
    socket.on('connect', () => {
      const length = Buffer.alloc(2);
      length.writeUInt16BE(message.length);
      socket.write(Buffer.concat([length, message]));
    });
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (received.length >= 2 && received.length >= 2 + received.readUInt16BE(0)) {
        done(null, received.subarray(2, 2 + received.readUInt16BE(0)));
      }
    });
    socket.on('end', () => done(new Error(`${formatDnsServer(server)} closed the connection without an answer`)));
  });
}

/** A record's data (dns-packet types an OPT record without one). */
export function recordData(rr: dnsPacket.Answer): unknown {
  return 'data' in rr ? rr.data : undefined;
}

/** The answer's rcode name (`NOERROR`, `NXDOMAIN`, `REFUSED`, …). */
export function rcodeOf(message: DnsMessage): string {
  return message.rcode ?? 'NOERROR';
}

/**
 * Asks `server` one question and decodes the answer. `recursion: false`
 * (RD clear) asks an authoritative server about its own zone only.
 */
export async function query(
  server: DnsServer,
  name: string,
  type: dnsPacket.RecordType,
  options: { recursion?: boolean; timeoutMs?: number } = {},
): Promise<DnsMessage> {
  const message = dnsPacket.encode({
    type: 'query',
    id: messageId(),
    flags: options.recursion === false ? 0 : dnsPacket.RECURSION_DESIRED,
    questions: [{ type, name, class: 'IN' }],
  });
  const answer = await exchange(
    server,
    message,
    options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs },
  );
  return dnsPacket.decode(answer) as DnsMessage;
}

/**
 * Asks the servers in order until one answers (a timeout or network error
 * moves to the next); an answer with SERVFAIL or REFUSED also moves on.
 * Rejects with every server's error when none answers.
 */
export async function queryAny(
  servers: readonly DnsServer[],
  name: string,
  type: dnsPacket.RecordType,
  options: { timeoutMs?: number } = {},
): Promise<DnsMessage> {
  const errors: string[] = [];
  for (const server of servers) {
    try {
      const answer = await query(server, name, type, options);
      const rcode = rcodeOf(answer);
      if (rcode === 'SERVFAIL' || rcode === 'REFUSED') {
        errors.push(`${formatDnsServer(server)} answered ${rcode}`);
        continue;
      }
      return answer;
    } catch (err) {
      errors.push((err as Error).message);
    }
  }
  throw new Error(`${type} ${name}: ${errors.join('; ') || 'no resolver configured'}`);
}
