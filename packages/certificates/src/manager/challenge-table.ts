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
  /** Where each challenge also goes (the daemon's fleet: every node answers it); present waits for it. */
  readonly #relay: ChallengeSolver | undefined;
  /** token → the identifier it validates and the key authorization to answer. */
  readonly #http = new Map<string, { identifier: string; keyAuthorization: string }>();
  /** identifier → the `acme-tls/1` challenge certificate's context. */
  readonly #alpn = new Map<string, SecureContext>();

  /**
   * `relay`: where each challenge also goes once this table answers it (the
   * data-plane nodes of a fleet): `present` resolves once the relay has it;
   * a relay's clean-up error is ignored. Default none.
   */
  constructor(relay?: ChallengeSolver) {
    this.#relay = relay;
  }

  /**
   * Starts answering `challenge` (called by the issuer before it asks the CA
   * to validate); with a relay, resolves once the relay answers it too. A
   * DNS-01 challenge is not the table's: it throws, so an order never waits
   * on a record nobody published.
   */
  present(challenge: PresentedChallenge): void | Promise<void> {
    const identifier = challenge.identifier.toLowerCase();
    if (challenge.type === 'dns-01') {
      throw new Error(`no DNS provider is configured to publish the dns-01 record of ${identifier}`);
    }
    if (challenge.type === 'http-01') {
      this.#http.set(challenge.token, { identifier, keyAuthorization: challenge.keyAuthorization });
    } else {
      this.#alpn.set(identifier, createSecureContext({ cert: challenge.certificatePem, key: challenge.privateKeyPem }));
    }
    return this.#relay?.present(challenge);
  }

  /** Stops answering `challenge` (called once per presented challenge, whatever the outcome), and the relay too. */
  cleanUp(challenge: PresentedChallenge): void | Promise<void> {
    if (challenge.type === 'http-01') this.#http.delete(challenge.token);
    else if (challenge.type === 'tls-alpn-01') this.#alpn.delete(challenge.identifier.toLowerCase());
    const relayed = this.#relay?.cleanUp(challenge);
    return relayed instanceof Promise ? relayed.catch(() => {}) : undefined;
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
