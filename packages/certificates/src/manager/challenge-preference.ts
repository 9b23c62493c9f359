import type { ChallengeType } from '../acme/challenge-solver.js';

/** The challenge types tried by default, in order: HTTP-01, then TLS-ALPN-01. */
export const DEFAULT_CHALLENGE_ORDER: readonly ChallengeType[] = Object.freeze(['http-01', 'tls-alpn-01']);

/**
 * Which challenge type to try first with each CA: the configured order,
 * with the type that last succeeded with that CA moved to the front. Kept
 * in memory only: after a restart the configured order applies again, and
 * the first success teaches it anew.
 */
export class ChallengePreference {
  readonly #types: readonly ChallengeType[];
  readonly #succeeded = new Map<string, ChallengeType>();

  /** `types`: the allowed types in order of preference, duplicates ignored; must not be empty. */
  constructor(types: readonly ChallengeType[] = DEFAULT_CHALLENGE_ORDER) {
    const unique = [...new Set(types)];
    if (unique.length === 0) throw new TypeError('at least one challenge type is needed');
    this.#types = unique;
  }

  /** The types to try with CA `ca`, in order. */
  order(ca: string): ChallengeType[] {
    const first = this.#succeeded.get(ca);
    return first === undefined ? [...this.#types] : [first, ...this.#types.filter((type) => type !== first)];
  }

  /** Records that `type` worked with CA `ca`: it goes first next time. */
  succeeded(ca: string, type: ChallengeType): void {
    this.#succeeded.set(ca, type);
  }
}
