/** Where ACME HTTP-01 validation requests arrive (RFC 8555 §8.3). */
export const ACME_CHALLENGE_PREFIX = '/.well-known/acme-challenge/';

/**
 * The port automatic HTTPS answers HTTP-01 challenges through. The front
 * door asks it about every request (not upgrade) whose path starts with
 * {@link ACME_CHALLENGE_PREFIX}, before host matching, routing, redirects
 * and site middleware, so a challenge is answered for a host without a
 * route, or whose site redirects or requires `basic_auth`. Without a
 * responder such requests go on as any other (and are never redirected).
 */
export interface ChallengeResponder {
  /**
   * The key authorization to answer for `token` (the path after the prefix,
   * without query) on `host` (the Host header lowercased, port and brackets
   * removed), or null when this host has no such challenge pending: the
   * request then goes on as any other. The responder checks the host
   * itself. Must not throw (a throw counts as null).
   */
  respond(token: string, host: string): string | null;
}

/** Whether a request path (origin form, without query) is an ACME HTTP-01 path. */
export function isChallengePath(path: string): boolean {
  return path.startsWith(ACME_CHALLENGE_PREFIX);
}
