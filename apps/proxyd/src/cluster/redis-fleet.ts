import {
  type CertificateLogger,
  type CertificateManager,
  ChallengeTable,
  FleetChallenges,
  RedisFleet,
  type RedisStorage,
  SharedTicketKeys,
} from '@proxyd/certificates';
import type { Fleet } from '@proxyd/cluster';

/** The challenge table of a daemon on Redis storage, and the fleet it joins once its data plane serves. */
export interface RedisFleetWiring {
  /** Give it to the certificate wiring: what it presents reaches this node's data planes and every other node. */
  readonly table: ChallengeTable;
  /** Joins: answers the others' challenges, reloads what they obtain, shares the session-ticket keys. */
  join(options: RedisFleetJoin): void;
  /** The manager's `onObtained`: tells the others (a failure is logged; they catch up at their next check). */
  obtained(name: string): void;
  /** Unsubscribes and stops the ticket-key schedule. */
  close(): void;
}

/** What {@link RedisFleetWiring.join} needs: the node's manager and how to give its data planes new ticket keys. */
export interface RedisFleetJoin {
  manager: CertificateManager;
  setTicketKeys(keys: Buffer): Promise<void>;
  /** How long one set of ticket keys lives, ms (default 12 h). */
  ticketKeyRotationMs?: number;
}

/**
 * Global option `storage redis`: the daemon is one node of a fleet sharing
 * that Redis. Its challenge table relays what it presents to its own data
 * planes (`fleet()`, read at each challenge) and then, through Redis, to
 * every other node, waiting for all of them; what another node presents is
 * answered here from the same table. A certificate this node stores is
 * announced; one another node stores is reloaded from storage at once (for
 * the names this node manages). The TLS session-ticket keys come from
 * storage ({@link SharedTicketKeys}).
 */
export function redisFleetWiring(
  storage: RedisStorage,
  fleet: () => Pick<Fleet, 'presentChallenge' | 'cleanUpChallenge'> | null,
  log: CertificateLogger,
): RedisFleetWiring {
  const shared = new RedisFleet(storage);
  const relay = new FleetChallenges(
    {
      present: async (challenge) => await fleet()?.presentChallenge(challenge),
      cleanUp: async (challenge) => await fleet()?.cleanUpChallenge(challenge),
    },
    shared,
  );
  const table = new ChallengeTable(relay);
  let ticketKeys: SharedTicketKeys | null = null;
  return {
    table,
    join({ manager, setTicketKeys, ticketKeyRotationMs }) {
      ticketKeys = new SharedTicketKeys({
        storage,
        fleet: shared,
        apply: setTicketKeys,
        ...(ticketKeyRotationMs === undefined ? {} : { rotationMs: ticketKeyRotationMs }),
        log,
      });
      shared.start({
        present: (challenge) => relay.answer(table, challenge, true),
        cleanUp: (challenge) => relay.answer(table, challenge, false),
        certificate: (name) => void manager.reload(name),
        ticketKeys: () => void ticketKeys?.refresh(),
      });
      ticketKeys.start();
    },
    obtained(name) {
      shared.certificateStored(name).catch((err: Error) => {
        log.warn({ name, storage: 'redis', error: err.message }, `other nodes not told of ${name}: ${err.message}`);
      });
    },
    close() {
      ticketKeys?.stop();
      shared.close();
    },
  };
}
