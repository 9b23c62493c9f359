import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CertificatesErrorCode } from '../errors.js';
import {
  ariCertId,
  nextRenewalInfoPoll,
  parseRenewalInfo,
  RENEWAL_INFO_DEFAULT_POLL_MS,
  RENEWAL_INFO_MAX_POLL_MS,
  RENEWAL_INFO_MIN_POLL_MS,
  selectAriRenewalTime,
} from './ari.js';

// RFC 9773 §4.1's example: AKI keyIdentifier 69:88:5B:…:D4 and serial
// 0x87654321 (DER 00 87 65 43 21). Made with `openssl req -x509` and
// subjectKeyIdentifier/authorityKeyIdentifier set to that key identifier.
const RFC_EXAMPLE = `-----BEGIN CERTIFICATE-----
MIIBXDCCAQGgAwIBAgIFAIdlQyEwCgYIKoZIzj0EAwIwEzERMA8GA1UEAwwIYXJp
LnRlc3QwHhcNMjYxMTI0MjAxODMwWhcNMjYxMTI1MjAxODMwWjATMREwDwYDVQQD
DAhhcmkudGVzdDBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABMVtABlsNSoSA3CM
X9im1OWrBNtTfroXXefRcvP0GDPT8ilhnuJhrrig5ZQr3S/RAla+mJplauKgBN1z
eurvY3+jQjBAMB0GA1UdDgQWBBRpiFtrh0ZAQeGze4R7oK4s3gHI1DAfBgNVHSME
GDAWgBRpiFtrh0ZAQeGze4R7oK4s3gHI1DAKBggqhkjOPQQDAgNJADBGAiEAwHDz
bsAQG/EbYW5h7OS6VgfkNVOejztHt04/0Q9vje0CIQCiUsosUPLxlt5CeFvUGR2x
e+bOPE+N2i8eUar6cv3jzQ==
-----END CERTIFICATE-----
`;
const RFC_EXAMPLE_ID = 'aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE';
/** selectAriRenewalTime(2025-01-03 … 2025-01-07, RFC_EXAMPLE_ID): 2025-01-03T19:59:13.377Z. */
const PINNED_SELECTION = 1735934353377;

// The same key, serial 0x1234, no extensions at all.
const NO_AKI = `-----BEGIN CERTIFICATE-----
MIIBFDCBuqADAgECAgISNDAKBggqhkjOPQQDAjATMREwDwYDVQQDDAhhcmkudGVz
dDAeFw0yNjExMjQyMDE4MzBaFw0yNjExMjUyMDE4MzBaMBMxETAPBgNVBAMMCGFy
aS50ZXN0MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAExW0AGWw1KhIDcIxf2KbU
5asE21N+uhdd59Fy8/QYM9PyKWGe4mGuuKDllCvdL9ECVr6YmmVq4qAE3XN66u9j
fzAKBggqhkjOPQQDAgNJADBGAiEAiTqBEh3IAODsF+vCs/LedbTM5Oy2WhbOaQJi
0yLjH24CIQDu/4otlUrUetvTRkiZXxIMA9V7hwe0+55HuvabO6Gbjg==
-----END CERTIFICATE-----
`;

describe('ariCertId', () => {
  it("is RFC 9773's example identifier, from PEM, from DER and from a chain's first certificate", () => {
    expect(ariCertId(RFC_EXAMPLE)).toBe(RFC_EXAMPLE_ID);
    expect(ariCertId(new X509Certificate(RFC_EXAMPLE).raw)).toBe(RFC_EXAMPLE_ID);
    expect(ariCertId(RFC_EXAMPLE + NO_AKI)).toBe(RFC_EXAMPLE_ID);
  });

  it.each([
    { case: 'a certificate without authority key identifier', input: NO_AKI },
    { case: 'text that is no certificate', input: 'not a certificate' },
    { case: 'truncated DER', input: new X509Certificate(RFC_EXAMPLE).raw.subarray(0, 40) },
  ])('throws CERT_ARI_CERT_ID_UNAVAILABLE for $case', ({ input }) => {
    expect(() => ariCertId(input)).toThrow(
      expect.objectContaining({ code: CertificatesErrorCode.ARI_CERT_ID_UNAVAILABLE }),
    );
  });
});

describe('parseRenewalInfo', () => {
  const window = { start: '2025-01-03T00:00:00Z', end: '2025-01-07T00:00:00Z' };
  const parsed = { start: Date.UTC(2025, 0, 3), end: Date.UTC(2025, 0, 7) };

  it.each([
    { case: 'a window', body: { suggestedWindow: window }, expected: { window: parsed, explanationUrl: null } },
    {
      case: 'a window and an explanation',
      body: { suggestedWindow: window, explanationURL: 'https://ca.test/incident' },
      expected: { window: parsed, explanationUrl: 'https://ca.test/incident' },
    },
    {
      case: 'an explanation that is not a string (ignored)',
      body: { suggestedWindow: window, explanationURL: 7 },
      expected: { window: parsed, explanationUrl: null },
    },
    {
      case: 'fractional seconds and offsets',
      body: { suggestedWindow: { start: '2025-01-03T01:00:00.5+01:00', end: '2025-01-06t23:00:00-01:00' } },
      expected: { window: { start: parsed.start + 500, end: parsed.end }, explanationUrl: null },
    },
    { case: 'no window', body: {}, expected: null },
    { case: 'not an object', body: 'soon', expected: null },
    { case: 'null', body: null, expected: null },
    {
      case: 'end equal to start',
      body: { suggestedWindow: { start: window.start, end: window.start } },
      expected: null,
    },
    { case: 'end before start', body: { suggestedWindow: { start: window.end, end: window.start } }, expected: null },
    {
      case: 'a date without time',
      body: { suggestedWindow: { start: '2025-01-03', end: window.end } },
      expected: null,
    },
    { case: 'numbers', body: { suggestedWindow: { start: parsed.start, end: parsed.end } }, expected: null },
    {
      case: 'an impossible date',
      body: { suggestedWindow: { start: '2025-02-30T00:00:00Z', end: window.end } },
      expected: null,
    },
  ])('$case', ({ body, expected }) => {
    expect(parseRenewalInfo(body)).toEqual(expected);
  });
});

describe('selectAriRenewalTime', () => {
  const window = { start: Date.UTC(2025, 0, 3), end: Date.UTC(2025, 0, 7) };

  it('is stable across calls and processes (pinned) for the same certificate and window', () => {
    const first = selectAriRenewalTime(window, RFC_EXAMPLE_ID);
    expect(selectAriRenewalTime({ ...window }, RFC_EXAMPLE_ID)).toBe(first);
    // Pinned: a change of the derivation would move every stored certificate's renewal time.
    expect(first).toBe(PINNED_SELECTION);
  });

  it('lies inside the window and spreads certificates evenly over it', () => {
    const quarters = [0, 0, 0, 0];
    const span = window.end - window.start;
    for (let i = 0; i < 1000; i++) {
      const at = selectAriRenewalTime(window, `key.serial${i}`);
      expect(at).toBeGreaterThanOrEqual(window.start);
      expect(at).toBeLessThanOrEqual(window.end);
      const quarter = Math.min(3, Math.floor(((at - window.start) / span) * 4));
      quarters[quarter] = (quarters[quarter] ?? 0) + 1;
    }
    for (const count of quarters) expect(count).toBeGreaterThan(200);
  });

  it('picks anew when the CA moves the window, inside the new one', () => {
    const moved = { start: window.start - 10 * 86_400_000, end: window.start - 9 * 86_400_000 };
    const at = selectAriRenewalTime(moved, RFC_EXAMPLE_ID);
    expect(at).toBeGreaterThanOrEqual(moved.start);
    expect(at).toBeLessThanOrEqual(moved.end);
  });
});

describe('nextRenewalInfoPoll', () => {
  const NOW = Date.UTC(2025, 0, 1, 12, 0, 0);

  it.each([
    { case: "Let's Encrypt's 6 hours", retryAfter: '21600', expected: NOW + 21_600_000 },
    { case: 'absent: 6 hours', retryAfter: undefined, expected: NOW + RENEWAL_INFO_DEFAULT_POLL_MS },
    { case: 'unparsable: 6 hours', retryAfter: 'later', expected: NOW + RENEWAL_INFO_DEFAULT_POLL_MS },
    { case: 'under a minute: a minute', retryAfter: '10', expected: NOW + RENEWAL_INFO_MIN_POLL_MS },
    { case: 'a date in the past: a minute', retryAfter: 'Wed, 01 Jan 2025 11:00:00 GMT', expected: NOW + 60_000 },
    { case: 'over a day: a day', retryAfter: '172800', expected: NOW + RENEWAL_INFO_MAX_POLL_MS },
    { case: 'an HTTP-date in 2 hours', retryAfter: 'Wed, 01 Jan 2025 14:00:00 GMT', expected: NOW + 7_200_000 },
  ])('$case', ({ retryAfter, expected }) => {
    expect(nextRenewalInfoPoll(retryAfter, NOW)).toBe(expected);
  });
});
