import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AnalyticsError } from './errors.js';
import { defaultGeoipPath, openCountryLookup } from './geoip.js';
import { hashString } from './hash.js';

describe('GeoIP country lookup', () => {
  it('reads the embedded DB-IP database (IPv4 and IPv6); no country for loopback, private, garbage', async () => {
    const lookup = await openCountryLookup();
    const at = (ip: string) => lookup(ip, hashString(ip));
    expect(at('8.8.8.8')).toBe('US');
    expect(at('81.2.69.142')).toBe('GB');
    expect(at('2a00:1450:4001::1')).toBe('DE');
    expect(at('127.0.0.1')).toBeNull();
    expect(at('10.0.0.1')).toBeNull();
    expect(at('192.168.1.1')).toBeNull();
    expect(at('::1')).toBeNull();
    expect(at('not an ip')).toBeNull();
    // The cache answers a repeat the same way.
    expect(at('8.8.8.8')).toBe('US');
  });

  it('geoip_db <path>: another MaxMind-format file (here the IPv4-only one)', async () => {
    const v4 = path.join(path.dirname(defaultGeoipPath()), 'dbip-country-ipv4.mmdb');
    const lookup = await openCountryLookup(v4);
    expect(lookup('1.1.1.1', hashString('1.1.1.1'))).toBe('AU');
    expect(lookup('8.8.8.8', hashString('8.8.8.8'))).toBe('US');
  });

  it('an unreadable database fails with ANALYTICS_GEOIP_UNREADABLE', async () => {
    await expect(openCountryLookup('/nonexistent.mmdb')).rejects.toBeInstanceOf(AnalyticsError);
    await expect(openCountryLookup(new URL('../package.json', import.meta.url).pathname)).rejects.toMatchObject({
      code: 'ANALYTICS_GEOIP_UNREADABLE',
    });
  });
});
