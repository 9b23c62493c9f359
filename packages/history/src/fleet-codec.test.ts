import { describe, expect, it } from 'vitest';
import { decodeFleetBatch, encodeFleetBatch } from './fleet-codec.js';
import { MINUTE, rollup, T0 } from './rollups.test-helpers.js';

// Issue 31: what another node wrote to Redis is input from outside.
describe('fleet batches', () => {
  const one = rollup('site.test', T0 + MINUTE, {
    pageViews: 3,
    visitors: ['a', 'b'],
    breakdowns: { pages: { '/': 2, '/x': 1 } },
    lcpGood: { '/': 2 },
  });

  it('a batch decodes to the rollups encoded, sketch and all', () => {
    expect(decodeFleetBatch(encodeFleetBatch([one]))).toEqual([one]);
  });

  it.each([
    ['not an array', '{}', 'a JSON array'],
    ['a count below zero', JSON.stringify([{ ...JSON.parse(encodeFleetBatch([one]))[0], requests: -1 }]), 'requests'],
    ['a minute off the minute', JSON.stringify([{ ...JSON.parse(encodeFleetBatch([one]))[0], minute: 5 }]), 'minute'],
    [
      'a sketch of another size',
      JSON.stringify([{ ...JSON.parse(encodeFleetBatch([one]))[0], visitors: 'AA==' }]),
      'sketch',
    ],
    [
      'an uppercase domain',
      JSON.stringify([{ ...JSON.parse(encodeFleetBatch([one]))[0], domain: 'A.test' }]),
      'domain',
    ],
  ])('%s is refused, naming what', (_what, text, named) => {
    expect(() => decodeFleetBatch(text)).toThrow(named);
  });
});
