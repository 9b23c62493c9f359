import { randomBytes } from 'node:crypto';
import type {
  FleetEntry,
  FleetFollower,
  FleetRouteLog,
  FleetRouteRecord,
  FleetWrite,
  FleetWriteResult,
} from '@proxyd/model';
import type { Redis } from 'ioredis';
import { CertificatesError, CertificatesErrorCode } from '../errors.js';
import type { RedisStorage } from './redis-storage.js';

/** How a route is written to and read from Redis (the route store's `recordLine` and `parseRecordLine`). */
export interface RouteLineCodec {
  line(record: FleetRouteRecord): string;
  /** The record, or why the line is not a valid route. */
  parse(line: string): FleetRouteRecord | string;
}

/** Options of {@link RedisRouteLog}. */
export interface RedisRouteLogOptions {
  codec: RouteLineCodec;
  /** Entries the log keeps for catching up (approximate, `XADD MAXLEN ~`; default 10,000); older: the whole set. */
  logLength?: number;
  /** How long a write waits for Redis's answer, ms (default 5,000). */
  writeTimeoutMs?: number;
  /** How long the follower's `XREAD` blocks before it looks again, ms (default 1,000). */
  blockMs?: number;
}

/**
 * One write, atomic (a Lua script runs alone): every check and read comes
 * before the first write, so a refused or failed write changes nothing.
 *
 * KEYS: routes hash, version, epoch, log stream.
 * ARGV: kind, max routes, log length, source-set key prefix, then
 * upsert: domain, line, source ('' for none); delete: domain;
 * snapshot: source, then domain, line per route.
 * Replies: {'applied', epoch, version, deleted domain…}, {'absent', epoch,
 * version}, {'limit', size} or {'unseeded'}.
 */
const WRITE_SCRIPT = `
local routes, vkey, ekey, logkey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local kind, max, loglen, bysource = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
local epoch = redis.call('GET', ekey)
if not epoch then return {'unseeded'} end
local version = tonumber(redis.call('GET', vkey) or '0')
local function sourceof(line)
  local ok, route = pcall(cjson.decode, line)
  if ok and type(route) == 'table' and type(route.source) == 'string' then return route.source end
  return nil
end
local puts, dels = {}, {}
if kind == 'upsert' then
  local domain, line, source = ARGV[5], ARGV[6], ARGV[7]
  local old = redis.call('HGET', routes, domain)
  if not old then
    local size = redis.call('HLEN', routes) + 1
    if size > max then return {'limit', size} end
  end
  local next = version + 1
  local last = redis.call('XREVRANGE', logkey, '+', '-', 'COUNT', 1)[1]
  if last then next = math.max(next, tonumber(string.match(last[1], '^(%d+)')) + 1) end
  if old then
    local s = sourceof(old)
    if s then redis.call('SREM', bysource .. s, domain) end
  end
  redis.call('HSET', routes, domain, line)
  if source ~= '' then redis.call('SADD', bysource .. source, domain) end
  puts[1] = line
  version = next
elseif kind == 'delete' then
  local domain = ARGV[5]
  local old = redis.call('HGET', routes, domain)
  if not old then return {'absent', epoch, tostring(version)} end
  local next = version + 1
  local last = redis.call('XREVRANGE', logkey, '+', '-', 'COUNT', 1)[1]
  if last then next = math.max(next, tonumber(string.match(last[1], '^(%d+)')) + 1) end
  local s = sourceof(old)
  if s then redis.call('SREM', bysource .. s, domain) end
  redis.call('HDEL', routes, domain)
  dels[1] = domain
  version = next
elseif kind == 'snapshot' then
  local source = ARGV[5]
  local wanted = {}
  for i = 6, #ARGV, 2 do wanted[ARGV[i]] = ARGV[i + 1] end
  local leaving = {}
  for _, domain in ipairs(redis.call('SMEMBERS', bysource .. source)) do
    if not wanted[domain] then leaving[#leaving + 1] = domain end
  end
  local added = 0
  local olds = {}
  for domain in pairs(wanted) do
    local old = redis.call('HGET', routes, domain)
    if old then olds[domain] = sourceof(old) or '' else added = added + 1 end
  end
  if added > #leaving then
    local size = redis.call('HLEN', routes) - #leaving + added
    if size > max then return {'limit', size} end
  end
  local next = version + 1
  local last = redis.call('XREVRANGE', logkey, '+', '-', 'COUNT', 1)[1]
  if last then next = math.max(next, tonumber(string.match(last[1], '^(%d+)')) + 1) end
  for _, domain in ipairs(leaving) do
    redis.call('HDEL', routes, domain)
    redis.call('SREM', bysource .. source, domain)
    dels[#dels + 1] = domain
  end
  for i = 6, #ARGV, 2 do
    local domain, line = ARGV[i], ARGV[i + 1]
    local s = olds[domain]
    if s and s ~= '' and s ~= source then redis.call('SREM', bysource .. s, domain) end
    redis.call('HSET', routes, domain, line)
    redis.call('SADD', bysource .. source, domain)
    puts[#puts + 1] = line
  end
  version = next
else
  return redis.error_reply('unknown write ' .. kind)
end
redis.call('SET', vkey, version)
redis.call('XADD', logkey, 'MAXLEN', '~', loglen, version .. '-0', 'puts', table.concat(puts, '\\n'), 'deletes', table.concat(dels, '\\n'))
local reply = {'applied', epoch, tostring(version)}
for _, domain in ipairs(dels) do reply[#reply + 1] = domain end
return reply
`;

/**
 * Seeds a storage that holds no fleet routes (never used, or it lost its
 * data): only when the epoch key is absent, so one node seeds and the
 * others follow. KEYS as {@link WRITE_SCRIPT}; ARGV: the new epoch, the
 * source-set key prefix, then domain, line, source ('' for none) per route.
 */
const SEED_SCRIPT = `
local routes, vkey, ekey, logkey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
if redis.call('EXISTS', ekey) == 1 then return 0 end
redis.call('DEL', routes, logkey)
for i = 3, #ARGV, 3 do
  redis.call('HSET', routes, ARGV[i], ARGV[i + 1])
  if ARGV[i + 2] ~= '' then redis.call('SADD', ARGV[2] .. ARGV[i + 2], ARGV[i]) end
end
redis.call('SET', vkey, '0')
redis.call('SET', ekey, ARGV[1])
return 1
`;

type ScriptClient = Redis & {
  proxydRoutesWrite(...args: Array<string | number>): Promise<string[]>;
  proxydRoutesSeed(...args: Array<string | number>): Promise<number>;
};

function withScripts(client: Redis): ScriptClient {
  client.defineCommand('proxydRoutesWrite', { numberOfKeys: 4, lua: WRITE_SCRIPT });
  client.defineCommand('proxydRoutesSeed', { numberOfKeys: 4, lua: SEED_SCRIPT });
  return client as ScriptClient;
}

/**
 * The fleet's API routes in Redis (global option `storage redis`), the
 * route store's `FleetRouteLog`:
 *
 * | key                          | type   | holds                                                   |
 * | ---------------------------- | ------ | ------------------------------------------------------- |
 * | `<prefix>:routes`            | hash   | domain → the route's line (`{domain,upstream,tls,source}`) |
 * | `<prefix>:routes:source:<s>` | set    | the domains of source `s` (what a snapshot looks at)    |
 * | `<prefix>:routes:version`    | string | the fleet version: +1 per write                          |
 * | `<prefix>:routes:epoch`      | string | names this history (random, set when seeded)            |
 * | `<prefix>:routes:log`        | stream | one entry per write, id `<version>-0`: `puts`, `deletes` |
 *
 * - A write is one Lua script (`WRITE_SCRIPT`): it checks (the route limit
 *   against the fleet's API routes, a snapshot's source set) before it
 *   writes anything, then changes the hash and the sets, sets the version
 *   and appends the entry: all of it or nothing, and no two writes
 *   interleave. A write while the connection is not ready fails at once
 *   (`CERT_STORAGE_IO`, "redis is unreachable"), never queued.
 * - Following: a second connection (a duplicate: it follows a Sentinel
 *   failover as the first does) blocks on `XREAD` from the follower's
 *   version. On each (re)connection it first checks where the storage is:
 *   no epoch → it seeds it with the follower's routes; another epoch, a
 *   version behind the follower's (a failover to a replica that missed
 *   writes) or a log that no longer reaches back → the whole set (`HVALS`
 *   in one `MULTI` with the epoch and version); else `XREAD` catches up.
 *   Entries are handed over only when read on the connection that was
 *   checked, and only when they follow on without a hole.
 */
export class RedisRouteLog implements FleetRouteLog {
  readonly #client: ScriptClient;
  readonly #prefix: string;
  readonly #codec: RouteLineCodec;
  readonly #logLength: number;
  readonly #writeTimeoutMs: number;
  readonly #blockMs: number;
  #error: string | null = null;
  #reader: ScriptClient | null = null;
  #follower: FleetFollower | null = null;
  /** +1 each time the reader connects: entries read across a reconnection are not handed over. */
  #generation = 0;
  #checked = -1;
  #closed = false;
  #reported = new Set<string>();

  constructor(storage: RedisStorage, options: RedisRouteLogOptions) {
    const { client, keyPrefix } = storage.connection();
    this.#client = withScripts(client);
    this.#prefix = keyPrefix;
    this.#codec = options.codec;
    this.#logLength = options.logLength ?? 10_000;
    this.#writeTimeoutMs = options.writeTimeoutMs ?? 5_000;
    this.#blockMs = options.blockMs ?? 1_000;
    client.on('error', (err: Error) => {
      this.#error = err.message;
    });
    client.on('ready', () => {
      this.#error = null;
    });
  }

  reachable(): boolean {
    return this.#client.status === 'ready';
  }

  async write(write: FleetWrite, maxRoutes: number): Promise<FleetWriteResult> {
    let reply = await this.#run(write, maxRoutes);
    if (reply[0] === 'unseeded') {
      // No node has seeded this storage yet (or it lost its data): this node's routes first, then the write.
      await this.#call(() => this.#seed(this.#client), 'seed the fleet routes');
      reply = await this.#run(write, maxRoutes);
    }
    switch (reply[0]) {
      case 'limit':
        return { kind: 'limit', size: Number(reply[1]) };
      case 'absent':
        return { kind: 'absent', epoch: String(reply[1]), version: Number(reply[2]) };
      case 'applied': {
        const deletes = reply.slice(3);
        const puts = write.kind === 'upsert' ? [write.record] : write.kind === 'snapshot' ? write.records : [];
        return { kind: 'applied', epoch: String(reply[1]), entry: { version: Number(reply[2]), puts, deletes } };
      }
      default:
        throw unavailable(`redis answered the write with ${JSON.stringify(reply[0])}; nothing was applied`);
    }
  }

  follow(follower: FleetFollower): void {
    this.#follower = follower;
    const reader = withScripts(
      this.#client.duplicate({
        // Never queued or resent across a reconnection: what a reconnected reader reads is checked first.
        enableOfflineQueue: false,
        autoResendUnfulfilledCommands: false,
        maxRetriesPerRequest: 0,
      }),
    );
    this.#reader = reader;
    reader.on('error', () => {}); // the storage's client reports the connection state
    reader.on('ready', () => {
      this.#generation++;
    });
    void this.#loop(reader);
  }

  resync(): void {
    this.#checked = -1;
  }

  close(): void {
    this.#closed = true;
    this.#reader?.disconnect();
    this.#reader = null;
    this.#follower = null;
  }

  async #run(write: FleetWrite, maxRoutes: number): Promise<string[]> {
    const common = [this.#logLength, this.#sourceKey('')];
    let args: Array<string | number>;
    switch (write.kind) {
      case 'upsert':
        args = [write.record.domain, this.#codec.line(write.record), write.record.source ?? ''];
        break;
      case 'delete':
        args = [write.domain];
        break;
      case 'snapshot':
        args = [write.source, ...write.records.flatMap((record) => [record.domain, this.#codec.line(record)])];
        break;
    }
    return await this.#call(
      () => this.#client.proxydRoutesWrite(...this.#keys(), write.kind, maxRoutes, ...common, ...args),
      'apply the write',
    );
  }

  /** Runs one command: at once unreachable when the connection is not ready, bounded by `writeTimeoutMs`. */
  async #call<T>(command: () => Promise<T>, what: string): Promise<T> {
    if (this.#client.status !== 'ready') {
      // The first connection (or one after a clean close) is awaited; a lost one fails at once, never queued.
      if (this.#error !== null || !(await this.#ready())) {
        throw unavailable(`redis is unreachable (${this.#error ?? this.#client.status}); the write was not applied`);
      }
    }
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        command(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`no answer within ${this.#writeTimeoutMs} ms`)),
            this.#writeTimeoutMs,
          );
        }),
      ]);
    } catch (err) {
      throw unavailable(
        `redis did not answer (${(err as Error).message}) while asked to ${what}; it was applied whole or not at all: read GET /routes, or send it again`,
        err,
      );
    } finally {
      clearTimeout(timer);
    }
  }

  /** Whether the client becomes ready within `writeTimeoutMs` (or fails first). */
  #ready(): Promise<boolean> {
    const client = this.#client;
    return new Promise((resolve) => {
      const done = (ready: boolean) => {
        clearTimeout(timer);
        client.off('ready', onReady);
        client.off('error', onError);
        resolve(ready);
      };
      const onReady = () => done(true);
      const onError = () => done(false);
      const timer = setTimeout(() => done(false), this.#writeTimeoutMs);
      client.on('ready', onReady);
      client.on('error', onError);
    });
  }

  async #loop(reader: ScriptClient): Promise<void> {
    while (!this.#closed && this.#follower !== null) {
      const follower = this.#follower;
      if (reader.status !== 'ready') {
        await sleep(50);
        continue;
      }
      const generation = this.#generation;
      try {
        if (this.#checked !== generation) {
          await this.#check(reader, follower);
          this.#checked = generation;
        }
        const position = follower.position();
        if (position === null) {
          this.#checked = -1;
          await sleep(100);
          continue;
        }
        const reply = (await reader.xread(
          'COUNT',
          1000,
          'BLOCK',
          this.#blockMs,
          'STREAMS',
          this.#key('log'),
          `${position.version}-0`,
        )) as Array<[string, Array<[string, string[]]>]> | null;
        if (reply === null) {
          // Nothing new: the storage may still have lost its data or gone back (FLUSHALL, a failover) without
          // this connection dropping: one look at its epoch and version per `blockMs`.
          const [epoch, version] = await reader.mget(this.#key('epoch'), this.#key('version'));
          if (epoch !== position.epoch || Number(version ?? 0) < position.version) this.#checked = -1;
          continue;
        }
        // Read across a reconnection (another Redis, maybe), or the follower moved meanwhile: check again.
        if (this.#generation !== generation || this.#checked !== generation) continue;
        const now = follower.position();
        if (now === null || now.epoch !== position.epoch || now.version !== position.version) continue;
        const raw = reply[0]?.[1] ?? [];
        const entries: FleetEntry[] = [];
        let expected = position.version + 1;
        for (const [id, fields] of raw) {
          const version = Number(id.slice(0, id.indexOf('-')));
          if (version !== expected) break;
          entries.push(this.#entry(version, fields));
          expected++;
        }
        if (entries.length < raw.length) this.#checked = -1; // a hole: the log was trimmed past this node
        if (entries.length > 0) follower.entries(position.epoch, entries);
      } catch {
        this.#checked = -1;
        if (!this.#closed) await sleep(100);
      }
    }
  }

  /** Where the storage stands against the follower: seeds it, or hands over the whole set, when it must. */
  async #check(reader: ScriptClient, follower: FleetFollower): Promise<void> {
    let [epoch, version] = await reader.mget(this.#key('epoch'), this.#key('version'));
    if (epoch === null) {
      await this.#seed(reader);
      [epoch, version] = await reader.mget(this.#key('epoch'), this.#key('version'));
    }
    const position = follower.position();
    const fleetVersion = Number(version ?? 0);
    if (position !== null && position.epoch === epoch && position.version <= fleetVersion) {
      if (position.version === fleetVersion) return;
      const first = await reader.xrange(this.#key('log'), '-', '+', 'COUNT', 1);
      const oldest = first[0] === undefined ? Number.POSITIVE_INFINITY : Number(first[0][0].split('-')[0]);
      if (oldest <= position.version + 1) return; // XREAD catches up
    }
    const results = await reader.multi().get(this.#key('epoch')).get(this.#key('version')).hvals(this.#key('')).exec();
    const failed = results?.find(([err]) => err !== null)?.[0];
    if (results === null || failed) throw failed ?? new Error('the transaction was aborted');
    const [[, e], [, v], [, lines]] = results as [[null, string | null], [null, string | null], [null, string[]]];
    if (e === null) throw new Error('the fleet routes were not seeded');
    follower.reset({ epoch: e, version: Number(v ?? 0) }, this.#records(lines));
  }

  async #seed(client: ScriptClient): Promise<void> {
    const records = this.#follower?.records() ?? [];
    const args = records.flatMap((record) => [record.domain, this.#codec.line(record), record.source ?? '']);
    await client.proxydRoutesSeed(...this.#keys(), randomBytes(8).toString('hex'), this.#sourceKey(''), ...args);
  }

  #entry(version: number, fields: string[]): FleetEntry {
    let puts: FleetRouteRecord[] = [];
    let deletes: string[] = [];
    for (let i = 0; i + 1 < fields.length; i += 2) {
      const value = fields[i + 1] as string;
      if (fields[i] === 'puts') puts = this.#records(value === '' ? [] : value.split('\n'));
      else if (fields[i] === 'deletes') deletes = value === '' ? [] : value.split('\n');
    }
    return { version, puts, deletes };
  }

  #records(lines: readonly string[]): FleetRouteRecord[] {
    const records: FleetRouteRecord[] = [];
    for (const line of lines) {
      const parsed = this.#codec.parse(line);
      if (typeof parsed !== 'string') {
        records.push(parsed);
      } else if (!this.#reported.has(parsed)) {
        this.#reported.add(parsed);
        this.#follower?.invalid(parsed);
      }
    }
    return records;
  }

  #keys(): [string, string, string, string] {
    return [this.#key(''), this.#key('version'), this.#key('epoch'), this.#key('log')];
  }

  #key(name: string): string {
    return name === '' ? `${this.#prefix}:routes` : `${this.#prefix}:routes:${name}`;
  }

  #sourceKey(source: string): string {
    return `${this.#prefix}:routes:source:${source}`;
  }
}

function unavailable(message: string, cause?: unknown): CertificatesError {
  return new CertificatesError(CertificatesErrorCode.STORAGE_IO, message, cause === undefined ? undefined : { cause });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
