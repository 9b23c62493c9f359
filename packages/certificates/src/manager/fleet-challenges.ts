import type { ChallengeSolver, PresentedChallenge } from '../acme/challenge-solver.js';
import { challengeId, type RedisFleet } from '../storage/redis-fleet.js';
import type { ChallengeTable } from './challenge-table.js';

/**
 * The relay of a {@link ChallengeTable} when several nodes share Redis
 * storage: a challenge this node presents goes to its own data planes
 * (`local`, its workers) and then to every other node through the
 * {@link RedisFleet}; `present` resolves once they all answer it. A
 * challenge another node presented comes back through {@link answer}: it
 * goes into the table and to `local`, and is not sent to Redis again.
 */
export class FleetChallenges implements ChallengeSolver {
  readonly #local: ChallengeSolver;
  readonly #fleet: RedisFleet;
  /** Ids of challenges being answered for another node: the table's relay call for them stays local. */
  readonly #incoming = new Set<string>();

  constructor(local: ChallengeSolver, fleet: RedisFleet) {
    this.#local = local;
    this.#fleet = fleet;
  }

  async present(challenge: PresentedChallenge): Promise<void> {
    const incoming = this.#incoming.has(challengeId(challenge)); // read before the first await
    await this.#local.present(challenge);
    if (!incoming) await this.#fleet.present(challenge);
  }

  async cleanUp(challenge: PresentedChallenge): Promise<void> {
    const incoming = this.#incoming.has(challengeId(challenge));
    await Promise.resolve(this.#local.cleanUp(challenge)).catch(() => {});
    if (!incoming) await this.#fleet.cleanUp(challenge);
  }

  /** Answers (or stops answering, `present` false) a challenge another node presented, in `table` and its relay's local part. */
  async answer(table: ChallengeTable, challenge: PresentedChallenge, present: boolean): Promise<void> {
    const id = challengeId(challenge);
    this.#incoming.add(id);
    let done: void | Promise<void>;
    try {
      // The table calls this relay synchronously, which reads `#incoming` before its first await.
      done = present ? table.present(challenge) : table.cleanUp(challenge);
    } finally {
      this.#incoming.delete(id);
    }
    await done;
  }
}
