import { createSecureContext, type SecureContext } from 'node:tls';
import type { ChallengeResponder } from '@proxyd/proxy-core';
import type { ChallengeSolver, PresentedChallenge } from '../acme/challenge-solver.js';

/**
 * The challenges being presented to an ACME CA right now: the
 * {@link ChallengeSolver} the daemon gives every `AcmeIssuer`, and what its
 * listeners ask. HTTP-01 answers go by token and are given only to a request
 * whose host is the challenge's identifier; TLS-ALPN-01 certificates go by
 * server name. An entry lives from `present` to `cleanUp`.
 */
export class ChallengeTable implements ChallengeSolver, ChallengeResponder {
  /** token → the identifier it validates and the key authorization to answer. */
  readonly #http = new Map<string, { identifier: string; keyAuthorization: string }>();
  /** identifier → the `acme-tls/1` challenge certificate's context. */
  readonly #alpn = new Map<string, SecureContext>();

  /**
   * Starts answering `challenge` (called by the issuer before it asks the CA
   * to validate). A DNS-01 challenge is not the table's: it throws, so an
   * order never waits on a record nobody published.
   */
  present(challenge: PresentedChallenge): void {
    const identifier = challenge.identifier.toLowerCase();
    if (challenge.type === 'dns-01') {
      throw new Error(`no DNS provider is configured to publish the dns-01 record of ${identifier}`);
    }
    if (challenge.type === 'http-01') {
      this.#http.set(challenge.token, { identifier, keyAuthorization: challenge.keyAuthorization });
    } else {
      this.#alpn.set(identifier, createSecureContext({ cert: challenge.certificatePem, key: challenge.privateKeyPem }));
    }
  }

  /** Stops answering `challenge` (called once per presented challenge, whatever the outcome). */
  cleanUp(challenge: PresentedChallenge): void {
    if (challenge.type === 'http-01') this.#http.delete(challenge.token);
    else if (challenge.type === 'tls-alpn-01') this.#alpn.delete(challenge.identifier.toLowerCase());
  }

  /**
   * The HTTP-01 key authorization for `token` when a challenge with that
   * token is presented and `host` (lowercase, no port) is its identifier,
   * else null: a token is never answered on another host.
   */
  respond(token: string, host: string): string | null {
    const entry = this.#http.get(token);
    return entry !== undefined && entry.identifier === host.toLowerCase() ? entry.keyAuthorization : null;
  }

  /**
   * The TLS-ALPN-01 challenge certificate's context for a handshake with
   * SNI `serverName` that offered ALPN `acme-tls/1`, while a challenge for
   * that name is presented; else null (the handshake then gets the normal
   * certificate or fails).
   */
  alpnContextFor(serverName: string): SecureContext | null {
    return this.#alpn.get(serverName.toLowerCase()) ?? null;
  }

  /** How many challenges are presented now (HTTP-01 and TLS-ALPN-01). */
  get size(): number {
    return this.#http.size + this.#alpn.size;
  }
}
