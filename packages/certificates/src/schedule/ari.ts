import { createHash, X509Certificate } from 'node:crypto';
import { CertificatesError, CertificatesErrorCode } from '../errors.js';
import { parseRetryAfter } from './retry-after.js';

/** A CA's suggested renewal window (RFC 9773 `suggestedWindow`), epoch ms; `start < end`. */
export interface RenewalWindow {
  start: number;
  end: number;
}

/** A parsed RFC 9773 RenewalInfo object. */
export interface RenewalInfo {
  /** The window in which the CA suggests renewing. */
  window: RenewalWindow;
  /** The CA's page explaining the window (e.g. a mass revocation), or null when absent or not a string. */
  explanationUrl: string | null;
}

/**
 * Parses the body of a renewalInfo response (RFC 9773 §4.2). Returns null
 * when it is not an object with `suggestedWindow.start` and `.end` as RFC
 * 3339 timestamps and `end` after `start`: the caller then falls back to the
 * lifetime rule, as for a CA without ARI. An `explanationURL` that is not a
 * string is ignored, not fatal.
 */
export function parseRenewalInfo(body: unknown): RenewalInfo | null {
  if (typeof body !== 'object' || body === null) return null;
  const { suggestedWindow, explanationURL } = body as { suggestedWindow?: unknown; explanationURL?: unknown };
  if (typeof suggestedWindow !== 'object' || suggestedWindow === null) return null;
  const { start, end } = suggestedWindow as { start?: unknown; end?: unknown };
  const startMs = parseRfc3339(start);
  const endMs = parseRfc3339(end);
  if (startMs === null || endMs === null || endMs <= startMs) return null;
  return {
    window: { start: startMs, end: endMs },
    explanationUrl: typeof explanationURL === 'string' ? explanationURL : null,
  };
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

function parseRfc3339(value: unknown): number | null {
  if (typeof value !== 'string' || !RFC3339.test(value)) return null;
  const at = Date.parse(value.toUpperCase());
  return Number.isNaN(at) ? null : at;
}

/**
 * Picks the renewal time inside a CA's window: uniformly distributed over
 * `[start, end]` (ms) across certificates, as RFC 9773 §4.2 asks, yet a pure
 * function of the certificate's ARI identifier and the window (a SHA-256 of
 * the three). So the time is stable across checks and restarts with nothing
 * to persist, and a CA that moves the window gets a new pick inside the new
 * one, as the RFC expects.
 */
export function selectAriRenewalTime(window: RenewalWindow, certId: string): number {
  const digest = createHash('sha256').update(`${certId}\n${window.start}\n${window.end}`).digest();
  const fraction = digest.readUIntBE(0, 6) / 2 ** 48;
  return window.start + Math.floor(fraction * (window.end - window.start + 1));
}

/** Shortest wait before polling renewalInfo again, ms: 1 minute (RFC 9773's example lower limit). */
export const RENEWAL_INFO_MIN_POLL_MS = 60 * 1000;
/** Longest wait before polling renewalInfo again, ms: 1 day (RFC 9773's example upper limit). */
export const RENEWAL_INFO_MAX_POLL_MS = 24 * 60 * 60 * 1000;
/** Wait before polling renewalInfo again when the CA sent no usable `Retry-After`, ms: 6 hours (what Let's Encrypt sends). */
export const RENEWAL_INFO_DEFAULT_POLL_MS = 6 * 60 * 60 * 1000;

/**
 * When to fetch a certificate's renewalInfo again, epoch ms: the CA's
 * `Retry-After` (delta-seconds or HTTP-date) clamped to 1 minute … 1 day
 * from `now`, or 6 hours when it is absent or does not parse. Backoff after
 * a failed fetch is the caller's and takes priority (RFC 9773 §4.3).
 */
export function nextRenewalInfoPoll(retryAfter: string | null | undefined, now: number): number {
  const at = parseRetryAfter(retryAfter, now);
  if (at === null) return now + RENEWAL_INFO_DEFAULT_POLL_MS;
  return Math.min(Math.max(at, now + RENEWAL_INFO_MIN_POLL_MS), now + RENEWAL_INFO_MAX_POLL_MS);
}

/**
 * The RFC 9773 §4.1 certificate identifier:
 * `base64url(authorityKeyIdentifier.keyIdentifier) "." base64url(serial)`,
 * unpadded, the serial as its DER INTEGER content octets (so with the
 * leading zero byte a high first bit needs). Takes a PEM (the first
 * certificate of a chain) or a DER certificate. Throws
 * `CERT_ARI_CERT_ID_UNAVAILABLE` when it does not parse or has no
 * authority key identifier (every CA-issued certificate has one).
 */
export function ariCertId(certificate: string | Uint8Array): string {
  let der: Uint8Array;
  try {
    der = new X509Certificate(certificate).raw;
  } catch (cause) {
    throw new CertificatesError(
      CertificatesErrorCode.ARI_CERT_ID_UNAVAILABLE,
      'the certificate does not parse as X.509',
      {
        cause,
      },
    );
  }
  const { serial, keyId } = readSerialAndAuthorityKeyId(der);
  if (keyId === null) {
    throw new CertificatesError(
      CertificatesErrorCode.ARI_CERT_ID_UNAVAILABLE,
      'the certificate has no authority key identifier, so it has no ARI identifier',
    );
  }
  return `${Buffer.from(keyId).toString('base64url')}.${Buffer.from(serial).toString('base64url')}`;
}

/** A DER element: its tag byte and where its contents start and end. */
interface Element {
  tag: number;
  start: number;
  end: number;
}

function readElement(der: Uint8Array, offset: number, limit: number): Element {
  const tag = der[offset];
  let length = der[offset + 1];
  if (tag === undefined || length === undefined || (tag & 0x1f) === 0x1f) throw malformed();
  let start = offset + 2;
  if (length & 0x80) {
    const octets = length & 0x7f;
    if (octets < 1 || octets > 4) throw malformed();
    length = 0;
    for (let i = 0; i < octets; i++) length = length * 256 + (der[start + i] ?? Number.NaN);
    start += octets;
  }
  const end = start + length;
  if (!Number.isInteger(end) || end > limit) throw malformed();
  return { tag, start, end };
}

function children(der: Uint8Array, parent: Element): Element[] {
  const out: Element[] = [];
  for (let offset = parent.start; offset < parent.end; ) {
    const element = readElement(der, offset, parent.end);
    out.push(element);
    offset = element.end;
  }
  return out;
}

function malformed(): CertificatesError {
  return new CertificatesError(CertificatesErrorCode.ARI_CERT_ID_UNAVAILABLE, 'the certificate DER is malformed');
}

const SEQUENCE = 0x30;
const INTEGER = 0x02;
const OCTET_STRING = 0x04;
const EXTENSIONS = 0xa3; // [3] EXPLICIT in TBSCertificate
const KEY_IDENTIFIER = 0x80; // [0] IMPLICIT in AuthorityKeyIdentifier
const OBJECT_IDENTIFIER = 0x06;
const AUTHORITY_KEY_ID_OID = Uint8Array.of(0x55, 0x1d, 0x23); // 2.5.29.35, encoded

/** The serial's content octets and the AKI keyIdentifier (null when absent) of a certificate's DER. */
function readSerialAndAuthorityKeyId(der: Uint8Array): { serial: Uint8Array; keyId: Uint8Array | null } {
  const certificate = readElement(der, 0, der.length);
  const tbs = certificate.tag === SEQUENCE ? children(der, certificate)[0] : undefined;
  if (tbs?.tag !== SEQUENCE) throw malformed();
  const fields = children(der, tbs);
  // The version ([0] EXPLICIT) is absent from v1 certificates.
  const serial = fields.find((field) => field.tag === INTEGER);
  if (serial === undefined) throw malformed();
  const extensions = fields.find((field) => field.tag === EXTENSIONS);
  const list = extensions && children(der, extensions)[0];
  for (const extension of list ? children(der, list) : []) {
    const parts = children(der, extension);
    const oid = parts[0];
    const value = parts.at(-1);
    if (oid?.tag !== OBJECT_IDENTIFIER || value?.tag !== OCTET_STRING) continue;
    if (!sameBytes(der.subarray(oid.start, oid.end), AUTHORITY_KEY_ID_OID)) continue;
    const aki = readElement(der, value.start, value.end);
    const keyId = children(der, aki).find((part) => part.tag === KEY_IDENTIFIER);
    return {
      serial: der.subarray(serial.start, serial.end),
      keyId: keyId ? der.subarray(keyId.start, keyId.end) : null,
    };
  }
  return { serial: der.subarray(serial.start, serial.end), keyId: null };
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((byte, i) => byte === b[i]);
}
