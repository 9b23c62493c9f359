import { describe, expect, it } from 'vitest';
import { HyperLogLog } from './hyperloglog.js';

function ipv4(n: number): string {
  return `${(n >>> 24) & 255}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

describe('HyperLogLog', () => {
  it('estimates 1,000,000 distinct synthetic IPs within 2 % in 16 KB', () => {
    const hll = new HyperLogLog();
    const base = 0x0b000000; // 11.0.0.0: consecutive addresses, the hard case for a weak hash
    for (let i = 0; i < 1_000_000; i++) hll.add(ipv4(base + i));
    const estimate = hll.estimate();
    const error = Math.abs(estimate - 1_000_000) / 1_000_000;
    expect(error).toBeLessThan(0.02);
    expect(hll.bytes).toBe(16_384);
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
});
