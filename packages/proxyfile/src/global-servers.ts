import type { GlobalOptions, ServerOptions } from '@proxyd/model';
import type { Dispenser } from './dispenser.js';
import { ProxyfileErrorCode } from './errors.js';
import { blockValue, type Seen } from './global-lines.js';
import { parseDuration, parseSize } from './values.js';

const SERVERS_OPTIONS = ['timeouts', 'max_header_size', 'max_connections_per_ip'];
const SERVERS_EXPECTED = 'a block with timeouts, max_header_size and max_connections_per_ip';
const TIMEOUT_OPTIONS = ['read_body', 'read_header', 'write', 'idle'];
/** Each `timeouts` option: its model field, and whether 0 (none) is allowed. */
const TIMEOUT_FIELDS: Record<string, [keyof ServerOptions, boolean]> = {
  read_body: ['read_body_ms', true],
  read_header: ['read_header_ms', false],
  write: ['write_ms', true],
  idle: ['idle_ms', false],
};
/** Longest listener timeout, ms: one day (a Node timer holds at most 2^31-1 ms, about 24.8 days). */
const MAX_TIMEOUT_MS = 86_400_000;
/** Bounds of `max_header_size`, bytes: 1KiB to 16MiB. */
const MIN_HEADER_SIZE = 1024;
const MAX_HEADER_SIZE = 16 * 1024 * 1024;
/** Largest `max_connections_per_ip`. */
const MAX_CONNECTIONS_PER_IP = 1_000_000;

/** `servers { timeouts { read_body|read_header|write|idle <duration> } }`: the block, once, into `servers`. */
function readTimeouts(d: Dispenser, once: Seen, servers: ServerOptions): void {
  const first = once.get('timeouts');
  if (first) {
    throw d.error(
      d.name,
      ProxyfileErrorCode.DUPLICATE_DIRECTIVE,
      `"timeouts" is already set at ${first.file}:${first.line}:${first.column}`,
    );
  }
  once.set('timeouts', d.name);
  d.end();
  if (!d.hasBlock()) throw d.missing('a block with read_body, read_header, write and idle');
  const seen: Seen = new Map();
  for (const sub of d.blockLines()) {
    const [field, zero] = TIMEOUT_FIELDS[sub.name.text] ?? ['read_body_ms', true];
    const expected = `a duration such as 10s or 2m (${zero ? '0: none; ' : 'more than 0; '}at most 24h)`;
    const t = blockValue(sub, 'a timeouts', TIMEOUT_OPTIONS, seen, expected);
    const ms = parseDuration(t.text);
    if (ms === null || ms > MAX_TIMEOUT_MS || (ms === 0 && !zero)) {
      throw sub.unexpected(t, expected, ProxyfileErrorCode.INVALID_VALUE);
    }
    servers[field] = ms;
  }
}

/** The `servers` global option: its block, into `g.servers` (syntax: the global options' table). */
export function readServers(d: Dispenser, g: GlobalOptions): void {
  const arg = d.nextArg();
  if (arg !== null) {
    throw d.unexpected(
      arg,
      `${SERVERS_EXPECTED} (proxyd applies one servers block to every data-plane listener: no listener address)`,
    );
  }
  if (!d.hasBlock()) throw d.missing(SERVERS_EXPECTED);
  const once: Seen = new Map();
  const servers: ServerOptions = {};
  for (const sub of d.blockLines()) {
    const option = sub.name.text;
    if (option === 'timeouts') {
      readTimeouts(sub, once, servers);
      continue;
    }
    if (option === 'max_header_size') {
      const expected = 'a size such as 16KiB or 1MB (at least 1KiB, at most 16MiB)';
      const t = blockValue(sub, 'a servers', SERVERS_OPTIONS, once, expected);
      const bytes = parseSize(t.text);
      if (bytes === null || bytes < MIN_HEADER_SIZE || bytes > MAX_HEADER_SIZE) {
        throw sub.unexpected(t, expected, ProxyfileErrorCode.INVALID_VALUE);
      }
      servers.max_header_size_bytes = bytes;
      continue;
    }
    const expected = `a number of connections, 0 (no cap) to ${MAX_CONNECTIONS_PER_IP}`;
    const t = blockValue(sub, 'a servers', SERVERS_OPTIONS, once, expected);
    const n = /^\d+$/.test(t.text) ? Number(t.text) : Number.NaN;
    if (!(n <= MAX_CONNECTIONS_PER_IP)) throw sub.unexpected(t, expected, ProxyfileErrorCode.INVALID_VALUE);
    servers.max_connections_per_ip = n;
  }
  g.servers = servers;
}
