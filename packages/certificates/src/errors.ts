/** Stable codes of the certificates package's errors. */
export const CertificatesErrorCode = {
  /** The ACME CA could not be reached: the message carries the network or TLS error (e.g. `connect ECONNREFUSED`). */
  ACME_UNREACHABLE: 'CERT_ACME_UNREACHABLE',
  /** The ACME CA answered a request with a problem document (type, detail, HTTP status in the message). */
  ACME_PROBLEM: 'CERT_ACME_PROBLEM',
  /** The CA could not validate a challenge for a name; the message carries the CA's problem document. */
  ACME_VALIDATION_FAILED: 'CERT_ACME_VALIDATION_FAILED',
  /** The CA offers none of the requested challenge types for a name. */
  ACME_CHALLENGE_UNAVAILABLE: 'CERT_ACME_CHALLENGE_UNAVAILABLE',
  /** The challenge solver could not present or remove a challenge response. */
  ACME_CHALLENGE_SETUP_FAILED: 'CERT_ACME_CHALLENGE_SETUP_FAILED',
  /** An order became invalid, or the CA answered something the protocol does not allow. */
  ACME_ORDER_FAILED: 'CERT_ACME_ORDER_FAILED',
  /** An authorization or order stayed pending past the deadline. */
  ACME_TIMEOUT: 'CERT_ACME_TIMEOUT',
  /** A stored ACME account does not parse; it is left as it is, never overwritten. */
  ACME_ACCOUNT_INVALID: 'CERT_ACME_ACCOUNT_INVALID',
  /** A storage key or lock name is empty, absolute, has an empty, `.` or `..` segment, a segment starting with `.`, or lies under the reserved `locks/`. */
  STORAGE_INVALID_KEY: 'CERT_STORAGE_INVALID_KEY',
  /** A file or directory in the cert dir is open to group or others (mode wider than 0600 / 0700); it is neither used nor overwritten. */
  STORAGE_UNSAFE_MODE: 'CERT_STORAGE_UNSAFE_MODE',
  /** Reading, writing, listing or deleting in the storage failed (other than a missing key): the message names the path in the cert dir, or the Redis command and its error (e.g. Redis unreachable). */
  STORAGE_IO: 'CERT_STORAGE_IO',
  /** A stored value is encrypted and does not decrypt: altered, sealed with another key or under another storage key, or no `encryption_key_file` is configured; it is left as it is. */
  STORAGE_DECRYPT_FAILED: 'CERT_STORAGE_DECRYPT_FAILED',
  /** The Redis storage's configuration is unusable at start: an unset `{env.NAME}`, an unreadable `*_file`, an encryption key that is not 256 bits. */
  STORAGE_CONFIG_INVALID: 'CERT_STORAGE_CONFIG_INVALID',
  /** A storage lock was not obtained within `timeoutMs` (default 60 s). */
  LOCK_TIMEOUT: 'CERT_LOCK_TIMEOUT',
  /** A stored local-CA file (root or intermediate certificate or key) does not parse or does not match its pair; it is left as it is, never overwritten. */
  LOCAL_CA_INVALID: 'CERT_LOCAL_CA_INVALID',
  /** Only one half of the stored local root (certificate or key) exists; nothing is regenerated, since a new root would be untrusted everywhere. */
  LOCAL_CA_INCOMPLETE: 'CERT_LOCAL_CA_INCOMPLETE',
  /** A name given to the local CA is not a DNS name, a `*.` wildcard or an IP address, or no name was given. */
  LOCAL_CA_INVALID_NAME: 'CERT_LOCAL_CA_INVALID_NAME',
  /** A certificate given for its ARI identifier does not parse as X.509 (PEM or DER) or has no authority key identifier. */
  ARI_CERT_ID_UNAVAILABLE: 'CERT_ARI_CERT_ID_UNAVAILABLE',
  /** An ACME certificate was asked for a `*.` wildcard without a DNS provider (`tls { dns … }` or `acme_dns`): a wildcard needs the DNS-01 challenge; no order is placed. */
  ACME_WILDCARD_UNSUPPORTED: 'CERT_ACME_WILDCARD_UNSUPPORTED',
  /** A managed name's issuer is not configured: no ACME CA for an `acme` name, or no local CA for an `internal` one. */
  ISSUER_UNAVAILABLE: 'CERT_ISSUER_UNAVAILABLE',
  /** A stored certificate, key or metadata file of a managed name does not parse; it is left as it is and nothing is obtained over it. */
  STORED_CERTIFICATE_INVALID: 'CERT_STORED_CERTIFICATE_INVALID',
  /** An on-demand name was refused: the `ask` endpoint did not answer 2xx (a redirect, another status, a timeout or an error). */
  ON_DEMAND_REFUSED: 'CERT_ON_DEMAND_REFUSED',
  /** DNS-01: no zone was found for the challenge record (no SOA up the name's labels, or the resolvers failed to answer). */
  DNS_ZONE_NOT_FOUND: 'CERT_DNS_ZONE_NOT_FOUND',
  /** DNS-01: the DNS provider refused or failed to add or remove the TXT record (e.g. an RFC 2136 server refusing a wrong TSIG key, an HTTP API answering 403). */
  DNS_UPDATE_REFUSED: 'CERT_DNS_UPDATE_REFUSED',
  /** DNS-01: the TXT record was added but the zone's authoritative servers did not all answer it within the propagation timeout. */
  DNS_NOT_PROPAGATED: 'CERT_DNS_NOT_PROPAGATED',
  /** DNS-01: a DNS provider's configuration is unusable: an unknown provider, a missing option, an unset environment variable or unreadable `*_file`. */
  DNS_PROVIDER_INVALID: 'CERT_DNS_PROVIDER_INVALID',
} as const;
export type CertificatesErrorCode = (typeof CertificatesErrorCode)[keyof typeof CertificatesErrorCode];

/** The one error class of the certificates package: a stable `code`, a message and an optional cause. */
export class CertificatesError extends Error {
  readonly code: CertificatesErrorCode;

  constructor(code: CertificatesErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CertificatesError';
    this.code = code;
  }
}
