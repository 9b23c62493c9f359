/** The ACME challenge types proxyd answers. */
export type ChallengeType = 'http-01' | 'tls-alpn-01' | 'dns-01';

/** An HTTP-01 challenge to answer: `GET /.well-known/acme-challenge/<token>` → `keyAuthorization`. */
export interface Http01Challenge {
  type: 'http-01';
  /** The name being validated (the request's Host must be this name). */
  identifier: string;
  /** The path segment after `/.well-known/acme-challenge/`. */
  token: string;
  /** The exact response body (`text/plain` or `application/octet-stream`). */
  keyAuthorization: string;
}

/**
 * A TLS-ALPN-01 challenge to answer (RFC 8737): a TLS handshake with SNI
 * `identifier` that offers ALPN `acme-tls/1` gets `certificatePem` (made
 * with acme-client's `createAlpnCertificate`) and completes no HTTP.
 */
export interface TlsAlpn01Challenge {
  type: 'tls-alpn-01';
  identifier: string;
  token: string;
  keyAuthorization: string;
  /** The self-signed challenge certificate, PEM. */
  certificatePem: string;
  /** Its private key, PEM (ECDSA P-256). */
  privateKeyPem: string;
}

/**
 * A DNS-01 challenge to answer (RFC 8555 §8.4): a TXT record
 * `_acme-challenge.<identifier>` whose value is `keyAuthorization`, already
 * the base64url SHA-256 digest the record holds.
 */
export interface Dns01Challenge {
  type: 'dns-01';
  /** The name being validated, without `*.` (a wildcard's authorization is for its base name). */
  identifier: string;
  /** The order asked for `*.<identifier>`. */
  wildcard: boolean;
  token: string;
  /** The TXT record's value. */
  keyAuthorization: string;
}

/** A challenge the CA is about to check. */
export type PresentedChallenge = Http01Challenge | TlsAlpn01Challenge | Dns01Challenge;

/**
 * What answers ACME challenges: the daemon's HTTP-01 handler and its
 * TLS-ALPN-01 certificate table. `present` resolves once the answer is
 * served (the CA is told to check right after); `cleanUp` removes it and is
 * called once per presented challenge, whatever the outcome.
 */
export interface ChallengeSolver {
  present(challenge: PresentedChallenge): Promise<void> | void;
  cleanUp(challenge: PresentedChallenge): Promise<void> | void;
}
