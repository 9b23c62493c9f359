import { describe, expect, it } from 'vitest';
import { HyperLogLog } from './hyperloglog.js';

function ipv4(n: number): string {
  return `${(n >>> 24) & 255}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

describe('HyperLogLog', () => {
  it('estimates 1,000,000 distinct synthetic IPs within 2 % in 10 KB', () => {
    const hll = new HyperLogLog();
    const base = 0x0b000000; // 11.0.0.0: consecutive addresses, the hard case for a weak hash
    for (let i = 0; i < 1_000_000; i++) hll.add(ipv4(base + i));
    const estimate = hll.estimate();
    const error = Math.abs(estimate - 1_000_000) / 1_000_000;
    expect(error).toBeLessThan(0.02);
    expect(hll.bytes).toBe(10_241);
  });

  it('is within 2 % at small counts and ignores repeats', () => {
    const hll = new HyperLogLog();
    for (let r = 0; r < 5; r++) for (let i = 0; i < 100; i++) hll.add(`2001:db8::${i.toString(16)}`);
    expect(Math.abs(hll.estimate() - 100)).toBeLessThanOrEqual(2);
    expect(new HyperLogLog().estimate()).toBe(0);
  });

  it('stays within 2 % at several cardinalities (random IPs)', () => {
    let seed = 42;
    const rand = () => {
      seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
      return seed;
    };
    for (const n of [1_000, 10_000, 100_000]) {
      const hll = new HyperLogLog();
      const seen = new Set<number>();
      while (seen.size < n) {
        const ip = rand();
        seen.add(ip);
        hll.add(ipv4(ip));
      }
      expect(Math.abs(hll.estimate() - n) / n).toBeLessThan(0.02);
    }
  });

  it('packs 5-bit registers without disturbing neighbours (same estimate as one byte per register)', () => {
    // Reference: one byte per register, the textbook update and estimate.
    for (const p of [4, 10, 14]) {
      const m = 2 ** p;
      const reference = new Uint8Array(m);
      const hll = new HyperLogLog(p);
      let seed = p;
      for (let i = 0; i < 50_000; i++) {
        seed = (Math.imul(seed, 1_664_525) + 1_013_904_223) >>> 0;
        // Every 7th hash keeps only its index bits: the largest rank (32 - p + 1) in that register.
        const hash = i % 7 === 0 ? (seed >>> (32 - p)) << (32 - p) : seed;
        hll.addHash(hash >>> 0);
        const index = hash >>> (32 - p);
        const rank = Math.clz32((hash << p) | (1 << (p - 1))) + 1;
        reference[index] = Math.max(reference[index] as number, rank);
      }
      let sum = 0;
      let zeros = 0;
      for (const r of reference) {
        sum += 2 ** -r;
        if (r === 0) zeros++;
      }
      const alpha = m >= 128 ? 0.7213 / (1 + 1.079 / m) : m === 64 ? 0.709 : m === 32 ? 0.697 : 0.673;
      const raw = (alpha * m * m) / sum;
      const expected = raw <= 2.5 * m && zeros > 0 ? Math.round(m * Math.log(m / zeros)) : Math.round(raw);
      expect(hll.estimate()).toBe(expected);
    }
    expect(() => new HyperLogLog(3)).toThrow(RangeError);
  });

  for (const precision of [4, 14]) {
    it(`merge (precision ${precision}): the registers of one HyperLogLog fed every value, byte for byte`, () => {
      const parts = [0, 1, 2].map(() => new HyperLogLog(precision));
      const one = new HyperLogLog(precision);
      let seed = 9;
      for (let i = 0; i < 200_000; i++) {
        seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
        const ip = ipv4(seed);
        one.add(ip);
        // Each value to one part, some to two (a client seen by several workers).
        parts[seed % 3]?.add(ip);
        if (seed % 7 === 0) parts[(seed + 1) % 3]?.add(ip);
      }
      const merged = HyperLogLog.merge(
        parts.map((p) => p.exportRegisters()),
        precision,
      );
      expect(merged.exportRegisters()).toEqual(one.exportRegisters());
      expect(merged.estimate()).toBe(one.estimate());
      // Not trivially so: no part alone holds those registers.
      for (const p of parts) expect(p.exportRegisters()).not.toEqual(one.exportRegisters());
    });
  }

  it('merge of nothing is empty; registers of another precision are refused', () => {
    expect(HyperLogLog.merge([]).estimate()).toBe(0);
    expect(() => HyperLogLog.merge([new HyperLogLog(12).exportRegisters()])).toThrow(RangeError);
  });
});
