import { createHash, generateKeyPair, type KeyObject, randomBytes, sign } from 'node:crypto';
import { isIP } from 'node:net';

// A local-CA leaf written as DER bytes directly, signed with node:crypto
// (issue 30). Through @peculiar/x509 a leaf cost ~3.3 ms of CPU on the
// event loop (its ASN.1 object model: about a third of the primary's busy
// time while 10,000 names were certified); here the key pair and the
// signature are made on libuv's thread pool and the loop only concatenates
// a few hundred bytes (0.25 ms of CPU a leaf). The
// structure is what @peculiar/x509 made before (same extensions, same
// order), pinned by local-ca.test.ts against Node's X509Certificate,
// openssl and a TLS handshake.

/** What a leaf is signed by: the intermediate's key, subject and key identifier. */
export interface LeafSigner {
  /** The intermediate's private key (ECDSA P-256). */
  key: KeyObject;
  /** The intermediate's subject Name, DER, as it appears in its certificate (the leaf's issuer, byte for byte). */
  subjectDer: Buffer;
  /** The intermediate's key identifier (SHA-1 of its public key bits): the leaf's authority key identifier. */
  keyId: Buffer;
  /** The intermediate's notAfter, ms: no leaf outlives it. */
  notAfter: number;
}

/** A signed leaf: its PEM, its key's PKCS #8 PEM and its validity (whole seconds, as encoded). */
export interface SignedLeaf {
  certPem: string;
  keyPem: string;
  notBefore: number;
  notAfter: number;
}

// --- DER --------------------------------------------------------------------------------

function tlv(tag: number, ...parts: Buffer[]): Buffer {
  const body = parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
  const n = body.length;
  const head =
    n < 0x80
      ? Buffer.from([tag, n])
      : n < 0x100
        ? Buffer.from([tag, 0x81, n])
        : Buffer.from([tag, 0x82, n >> 8, n & 0xff]);
  return Buffer.concat([head, body]);
}
const seq = (...parts: Buffer[]) => tlv(0x30, ...parts);
const oid = (hex: string) => Buffer.from(hex, 'hex');
const octets = (body: Buffer) => tlv(0x04, body);

const ECDSA_SHA256 = seq(oid('06082a8648ce3d040302'));
const VERSION_3 = Buffer.from('a003020102', 'hex');
// Extensions: id, critical flag (only when true), value.
const BASIC_CONSTRAINTS_CA_FALSE = seq(oid('0603551d13'), Buffer.from('0101ff', 'hex'), octets(seq()));
const KEY_USAGE_DIGITAL_SIGNATURE = seq(
  oid('0603551d0f'),
  Buffer.from('0101ff', 'hex'),
  octets(Buffer.from('03020780', 'hex')),
);
const EKU_SERVER_AUTH = seq(oid('0603551d25'), octets(seq(oid('06082b06010505070301'))));
const SAN_ID = oid('0603551d11');
const SKI_ID = oid('0603551d0e');
const AKI_ID = oid('0603551d23');
const CN_ID = oid('0603550403');

/** UTCTime through 2049, GeneralizedTime from 2050 (RFC 5280 §4.1.2.5), whole seconds. */
function time(ms: number): Buffer {
  const iso = new Date(ms).toISOString(); // 2025-06-01T12:00:00.000Z
  const digits = iso.slice(0, 19).replace(/[-T:]/g, ''); // 20250601120000
  const year = Number(iso.slice(0, 4));
  return year < 2050 ? tlv(0x17, Buffer.from(`${digits.slice(2)}Z`)) : tlv(0x18, Buffer.from(`${digits}Z`));
}

/** An IP's bytes for an iPAddress SAN (IPv6 with `::` and an embedded IPv4 tail too). */
function ipBytes(ip: string): Buffer {
  if (isIP(ip) === 4) return Buffer.from(ip.split('.').map(Number));
  const groups = (s: string): string[] => {
    if (s === '') return [];
    const parts = s.split(':');
    const last = parts.at(-1) as string;
    if (!last.includes('.')) return parts;
    const [a = 0, b = 0, c = 0, d = 0] = last.split('.').map(Number);
    return [...parts.slice(0, -1), ((a << 8) | b).toString(16), ((c << 8) | d).toString(16)];
  };
  const [head = '', tail = ''] = ip.includes('::') ? ip.split('::') : [ip, ''];
  const h = groups(head);
  const t = groups(tail);
  const all = [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  const out = Buffer.alloc(16);
  for (let i = 0; i < 8; i++) out.writeUInt16BE(Number.parseInt(all[i] ?? '0', 16), i * 2);
  return out;
}

/** The leaf's subject: CN = the first name when it fits in 64 characters, else empty (the SANs are then critical). */
function subjectOf(names: readonly string[]): { der: Buffer; withCn: boolean } {
  const first = names[0];
  if (first === undefined || first.length > 64) return { der: seq(), withCn: false };
  return { der: seq(tlv(0x31, seq(CN_ID, tlv(0x0c, Buffer.from(first, 'utf8'))))), withCn: true };
}

/** 16 random bytes as a positive DER integer (top bit cleared, never a leading zero byte). */
function serial(): Buffer {
  const bytes = randomBytes(16);
  bytes[0] = ((bytes[0] as number) & 0x7f) | 0x40;
  return tlv(0x02, bytes);
}

/** The key identifier of a P-256 SubjectPublicKeyInfo: SHA-1 of its public key bits (the last 65 bytes). */
export function keyIdOf(spkiDer: Buffer): Buffer {
  return createHash('sha1')
    .update(spkiDer.subarray(spkiDer.length - 65))
    .digest();
}

/** The subject Name of a DER certificate, the bytes as encoded. */
export function subjectNameDer(certDer: Buffer): Buffer {
  // Certificate ::= SEQUENCE { tbsCertificate SEQUENCE { [0] version, serial, signature, issuer, validity, subject, … } }
  const read = (at: number): { start: number; end: number; body: number } => {
    let len = certDer[at + 1] as number;
    let body = at + 2;
    if (len & 0x80) {
      const bytes = len & 0x7f;
      len = 0;
      for (let i = 0; i < bytes; i++) len = len * 256 + (certDer[body + i] as number);
      body += bytes;
    }
    return { start: at, end: body + len, body };
  };
  const tbs = read(read(0).body);
  let at = tbs.body;
  if (certDer[at] === 0xa0) at = read(at).end;
  for (let skip = 0; skip < 4; skip++) at = read(at).end; // serial, signature, issuer, validity
  const subject = read(at);
  return certDer.subarray(subject.start, subject.end);
}

function pem(der: Buffer, label: string): string {
  const b64 = der.toString('base64').replace(/.{64}/g, '$&\n');
  return `-----BEGIN ${label}-----\n${b64}${b64.endsWith('\n') ? '' : '\n'}-----END ${label}-----`;
}

/**
 * A leaf for `names` (normalised: DNS names, `*.` wildcards, IPs) with a
 * fresh P-256 key, valid from `notBefore` until `notAfter` (ms; capped at
 * the signer's notAfter), serverAuth, CA:FALSE.
 */
export async function signLeaf(
  signer: LeafSigner,
  names: readonly string[],
  notBefore: number,
  notAfter: number,
): Promise<SignedLeaf> {
  const { spki, keyPem } = await new Promise<{ spki: Buffer; keyPem: string }>((resolve, reject) =>
    generateKeyPair(
      'ec',
      {
        namedCurve: 'P-256',
        publicKeyEncoding: { type: 'spki', format: 'der' },
        privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
      },
      (err, publicKey, privateKey) => (err ? reject(err) : resolve({ spki: publicKey, keyPem: privateKey })),
    ),
  );
  const from = Math.floor(notBefore / 1000) * 1000;
  const until = Math.floor(Math.min(notAfter, signer.notAfter) / 1000) * 1000;
  const subject = subjectOf(names);
  const san = seq(
    ...names.map((name) => (isIP(name) === 0 ? tlv(0x82, Buffer.from(name, 'ascii')) : tlv(0x87, ipBytes(name)))),
  );
  const extensions = seq(
    BASIC_CONSTRAINTS_CA_FALSE,
    KEY_USAGE_DIGITAL_SIGNATURE,
    EKU_SERVER_AUTH,
    subject.withCn ? seq(SAN_ID, octets(san)) : seq(SAN_ID, Buffer.from('0101ff', 'hex'), octets(san)),
    seq(SKI_ID, octets(octets(keyIdOf(spki)))),
    seq(AKI_ID, octets(seq(tlv(0x80, signer.keyId)))),
  );
  const tbs = seq(
    VERSION_3,
    serial(),
    ECDSA_SHA256,
    signer.subjectDer,
    seq(time(from), time(until)),
    subject.der,
    spki,
    tlv(0xa3, extensions),
  );
  const signature = await new Promise<Buffer>((resolve, reject) =>
    sign('sha256', tbs, signer.key, (err, sig) => (err ? reject(err) : resolve(sig))),
  );
  const der = seq(tbs, ECDSA_SHA256, tlv(0x03, Buffer.from([0]), signature));
  return { certPem: pem(der, 'CERTIFICATE'), keyPem, notBefore: from, notAfter: until };
}
