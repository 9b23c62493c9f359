import { createHmac, timingSafeEqual } from 'node:crypto';
import * as dnsPacket from 'dns-packet';

/** What dns-packet exports and its type definitions leave out: the name codec. */
const codec = dnsPacket as unknown as {
  name: { encode(name: string): Buffer };
};

/** TSIG algorithms (RFC 8945 §6) by the names BIND, Knot and `nsupdate` use. */
const ALGORITHMS = {
  'hmac-md5': { wire: 'hmac-md5.sig-alg.reg.int', digest: 'md5' },
  'hmac-sha1': { wire: 'hmac-sha1', digest: 'sha1' },
  'hmac-sha224': { wire: 'hmac-sha224', digest: 'sha224' },
  'hmac-sha256': { wire: 'hmac-sha256', digest: 'sha256' },
  'hmac-sha384': { wire: 'hmac-sha384', digest: 'sha384' },
  'hmac-sha512': { wire: 'hmac-sha512', digest: 'sha512' },
} as const;

/** A TSIG algorithm name. */
export type TsigAlgorithm = keyof typeof ALGORITHMS;

/** Whether `name` is a TSIG algorithm proxyd signs with. */
export function isTsigAlgorithm(name: string): name is TsigAlgorithm {
  return Object.hasOwn(ALGORITHMS, name);
}

/** The TSIG algorithms proxyd signs with. */
export const TSIG_ALGORITHMS = Object.keys(ALGORITHMS) as TsigAlgorithm[];

/** A TSIG key: its name (as the server knows it), algorithm and secret. The secret never appears in an error. */
export interface TsigKey {
  name: string;
  algorithm: TsigAlgorithm;
  /** The shared secret, decoded from its base64 form. */
  secret: Buffer;
}

/** RFC 8945 §5.2 error codes of a TSIG record, by name. */
const TSIG_ERRORS: Record<number, string> = {
  16: 'BADSIG (the server computed another signature: the secret or algorithm differs)',
  17: 'BADKEY (the server does not know this key name or algorithm)',
  18: 'BADTIME (the clocks of proxyd and the server differ by more than 5 minutes)',
  22: 'BADTRUNC',
};

/** Allowed clock difference with the server, seconds (RFC 8945 §10: 300 recommended). */
const FUDGE_SECONDS = 300;
const TYPE_TSIG = 250;
const CLASS_ANY = 255;

/** `name` in canonical wire form (lowercase, uncompressed). */
function wireName(name: string): Buffer {
  return codec.name.encode(name.toLowerCase().replace(/\.$/, ''));
}

function u48(seconds: number): Buffer {
  const buf = Buffer.alloc(6);
  buf.writeUIntBE(seconds, 0, 6);
  return buf;
}

function u16(value: number): Buffer {
  const buf = Buffer.alloc(2);
  buf.writeUInt16BE(value);
  return buf;
}

/** The TSIG variables (RFC 8945 §4.3.3) the MAC covers after the message. */
function variables(key: TsigKey, timeSigned: number, error: number, other: Buffer): Buffer {
  return Buffer.concat([
    wireName(key.name),
    u16(CLASS_ANY),
    Buffer.alloc(4), // TTL 0
    wireName(ALGORITHMS[key.algorithm].wire),
    u48(timeSigned),
    u16(FUDGE_SECONDS),
    u16(error),
    u16(other.length),
    other,
  ]);
}

function mac(key: TsigKey, ...parts: Buffer[]): Buffer {
  const hmac = createHmac(ALGORITHMS[key.algorithm].digest, key.secret);
  for (const part of parts) hmac.update(part);
  return hmac.digest();
}

/**
 * Signs a DNS message (RFC 8945 §4.3): appends a TSIG record whose MAC
 * covers the message as it is and the TSIG variables, and counts it in
 * ARCOUNT. Returns the signed message and the MAC (the response's MAC
 * covers it).
 */
export function signMessage(message: Buffer, key: TsigKey, nowMs: number): { signed: Buffer; mac: Buffer } {
  const timeSigned = Math.floor(nowMs / 1000);
  const digest = mac(key, message, variables(key, timeSigned, 0, Buffer.alloc(0)));
  const rdata = Buffer.concat([
    wireName(ALGORITHMS[key.algorithm].wire),
    u48(timeSigned),
    u16(FUDGE_SECONDS),
    u16(digest.length),
    digest,
    message.subarray(0, 2), // original id
    u16(0), // error
    u16(0), // other len
  ]);
  const record = Buffer.concat([
    wireName(key.name),
    u16(TYPE_TSIG),
    u16(CLASS_ANY),
    Buffer.alloc(4),
    u16(rdata.length),
    rdata,
  ]);
  const signed = Buffer.concat([message, record]);
  signed.writeUInt16BE(message.readUInt16BE(10) + 1, 10);
  return { signed, mac: digest };
}

/** Skips a (possibly compressed) name at `offset`; returns the offset after it. */
function skipName(buf: Buffer, offset: number): number {
  let at = offset;
  for (;;) {
    const length = buf.readUInt8(at);
    if (length === 0) return at + 1;
    if ((length & 0xc0) === 0xc0) return at + 2;
    at += 1 + length;
  }
}

/** The offset where the message's last resource record starts, or -1 when it has no additional record. */
function lastAdditionalOffset(buf: Buffer): number {
  const counts = [buf.readUInt16BE(4), buf.readUInt16BE(6), buf.readUInt16BE(8), buf.readUInt16BE(10)];
  if (counts[3] === 0) return -1;
  let at = 12;
  for (let i = 0; i < (counts[0] ?? 0); i++) at = skipName(buf, at) + 4;
  const records = (counts[1] ?? 0) + (counts[2] ?? 0) + (counts[3] ?? 0);
  let last = -1;
  for (let i = 0; i < records; i++) {
    last = at;
    at = skipName(buf, at);
    at += 10 + buf.readUInt16BE(at + 8);
  }
  return last;
}

/** What {@link verifyResponse} found in an answer's TSIG record. */
export interface TsigVerdict {
  /** The answer carried a TSIG record whose MAC verifies (error 0). */
  verified: boolean;
  /** The TSIG error the server set (0 none), e.g. 17 BADKEY. */
  error: number;
  /** A sentence for logs and status when not verified, else null. */
  problem: string | null;
}

/**
 * Checks the TSIG record of an answer to a signed request (RFC 8945 §5.3):
 * the MAC covers the request's MAC, the answer without its TSIG record
 * (ARCOUNT one less, the original id) and the TSIG variables. A server that
 * rejected the request's signature answers unsigned with the TSIG error set.
 */
export function verifyResponse(answer: Buffer, requestMac: Buffer, key: TsigKey): TsigVerdict {
  const start = lastAdditionalOffset(answer);
  if (start < 0) return { verified: false, error: 0, problem: 'the answer is not signed (no TSIG record)' };
  let at = skipName(answer, start);
  if (answer.readUInt16BE(at) !== TYPE_TSIG) {
    return { verified: false, error: 0, problem: 'the answer is not signed (no TSIG record)' };
  }
  at += 10;
  const algorithmEnd = skipName(answer, at);
  const timeSigned = answer.readUIntBE(algorithmEnd, 6);
  const macSize = answer.readUInt16BE(algorithmEnd + 8);
  const answerMac = answer.subarray(algorithmEnd + 10, algorithmEnd + 10 + macSize);
  const afterMac = algorithmEnd + 10 + macSize;
  const originalId = answer.readUInt16BE(afterMac);
  const error = answer.readUInt16BE(afterMac + 2);
  const otherLength = answer.readUInt16BE(afterMac + 4);
  const other = answer.subarray(afterMac + 6, afterMac + 6 + otherLength);
  if (error !== 0) {
    return { verified: false, error, problem: `TSIG error ${TSIG_ERRORS[error] ?? String(error)}` };
  }
  const unsigned = Buffer.from(answer.subarray(0, start));
  unsigned.writeUInt16BE(originalId, 0);
  unsigned.writeUInt16BE(unsigned.readUInt16BE(10) - 1, 10);
  const expected = mac(key, u16(requestMac.length), requestMac, unsigned, variables(key, timeSigned, error, other));
  const ok = expected.length === answerMac.length && timingSafeEqual(expected, answerMac);
  return ok
    ? { verified: true, error: 0, problem: null }
    : { verified: false, error: 0, problem: "the answer's TSIG signature does not verify with the key" };
}
