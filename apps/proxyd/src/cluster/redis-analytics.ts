import type { RedisStorage } from '@proxyd/certificates';
import { FLEET_RETENTION_MS, type FleetRollups } from '@proxyd/history';

type Client = ReturnType<RedisStorage['connection']>['client'];

/** A day's salt is kept two days: every node reads it all day, whatever its clock's offset. */
const SALT_TTL_MS = 2 * 86_400_000;

/**
 * History's {@link FleetRollups} in the Redis of `storage redis` (issue 31):
 *
 * - a batch is the string `<prefix>:analytics:batch:<id>` (JSON, expiring
 *   after {@link FLEET_RETENTION_MS}) and a member of the sorted set
 *   `<prefix>:analytics:batches` scored by its publication time; one
 *   `MULTI` writes both and trims the set of what has expired, so the set
 *   stays the size of an hour of batches (one a minute per node);
 * - the UTC day's visitor salt is `<prefix>:analytics:salt:<day ms>`, set
 *   with `NX` (the first node's wins) and read back in the same `MULTI`.
 *
 * Rollups and the salt are stored as they are (not sealed by
 * `encryption_key_file`): they hold counts, paths and a sketch, no client
 * address.
 */
export function redisFleetRollups(storage: RedisStorage): FleetRollups {
  const { client, keyPrefix } = storage.connection();
  const index = `${keyPrefix}:analytics:batches`;
  const batch = (id: string) => `${keyPrefix}:analytics:batch:${id}`;
  return {
    async publish(id, payload, at) {
      await exec(
        client
          .multi()
          .set(batch(id), payload, 'PX', FLEET_RETENTION_MS)
          .zadd(index, at, id)
          .zremrangebyscore(index, '-inf', `(${at - FLEET_RETENTION_MS}`),
      );
    },
    async list(since) {
      return await client.zrangebyscore(index, since, '+inf');
    },
    async read(ids) {
      if (ids.length === 0) return [];
      return await client.mget(ids.map(batch));
    },
    async salt(day, proposal) {
      const key = `${keyPrefix}:analytics:salt:${day}`;
      const results = await exec(client.multi().set(key, proposal, 'PX', SALT_TTL_MS, 'NX').getBuffer(key));
      const salt = results[1];
      if (!Buffer.isBuffer(salt) || salt.length !== proposal.length) throw new Error(`${key} is not a visitor salt`);
      return salt;
    },
  };
}

/** Runs a MULTI; rejects on any failed command. */
async function exec(transaction: ReturnType<Client['multi']>): Promise<unknown[]> {
  const results = await transaction.exec();
  if (results === null) throw new Error('the Redis transaction was aborted');
  const failed = results.find(([err]) => err !== null)?.[0];
  if (failed) throw failed;
  return results.map(([, value]) => value);
}
