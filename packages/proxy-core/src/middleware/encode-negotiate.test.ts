import type { Encoding } from '@proxyd/model';
import { describe, expect, it } from 'vitest';
import { acceptsCoding, EncodingNegotiator, MEMO_MAX, negotiateEncoding } from './encode-negotiate.js';

const ALL: readonly Encoding[] = ['zstd', 'br', 'gzip'];

describe('negotiateEncoding (RFC 9110 §12.5.3)', () => {
  const table: [string | undefined, readonly Encoding[], Encoding | null][] = [
    [undefined, ALL, null],
    ['', ALL, null],
    ['gzip', ALL, 'gzip'],
    ['gzip, deflate, br, zstd', ALL, 'zstd'],
    ['gzip, deflate, br, zstd', ['br', 'gzip'], 'br'],
    ['gzip, br', ['zstd', 'gzip', 'br'], 'gzip'],
    ['GZIP', ALL, 'gzip'],
    ['x-gzip', ALL, 'gzip'],
    ['br;q=0.5, gzip;q=0.8', ALL, 'gzip'],
    ['br;q=1.0, gzip;q=0.999', ALL, 'br'],
    ['gzip;q=0', ALL, null],
    ['*', ALL, 'zstd'],
    ['*;q=0.5, gzip', ['br', 'gzip'], 'gzip'],
    ['*, zstd;q=0', ALL, 'br'],
    ['*;q=0', ALL, null],
    ['identity', ALL, null],
    ['identity, gzip;q=0.5', ALL, null],
    ['gzip;q=0.5, identity;q=0.1', ALL, 'gzip'],
    ['gzip;q=0.5', ALL, 'gzip'],
    ['deflate', ALL, null],
    ['gzip;q=2', ALL, null],
    ['gzip;q=abc', ALL, null],
    ['gzip ; q=0.3 , br ; q=0.2', ALL, 'gzip'],
    [' , ,gzip', ALL, 'gzip'],
  ];
  it.each(table)('%j with %j → %j', (header, encodings, expected) => {
    expect(negotiateEncoding(header, encodings)).toBe(expected);
  });

  it('acceptsCoding: named or through *, q > 0', () => {
    expect(acceptsCoding('gzip, br', 'br')).toBe(true);
    expect(acceptsCoding('gzip;q=0', 'gzip')).toBe(false);
    expect(acceptsCoding('*', 'deflate')).toBe(true);
    expect(acceptsCoding(undefined, 'gzip')).toBe(false);
  });

  it('EncodingNegotiator memoises and stays bounded', () => {
    const n = new EncodingNegotiator(ALL);
    for (let i = 0; i < MEMO_MAX * 2; i++) expect(n.choose(`gzip, x-${i};q=0.5`)).toBe('gzip');
    expect(n.choose('br, gzip')).toBe('br');
    expect(n.choose('br, gzip')).toBe('br');
  });
});
