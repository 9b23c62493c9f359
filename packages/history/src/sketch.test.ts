import { HyperLogLog, ROLLUP_HLL_PRECISION } from '@proxyd/analytics';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decodeSketchInto,
  encodeSketch,
  estimateRegisters,
  PACKED_BYTES,
  packRegisters,
  REGISTERS,
  unpackRegisters,
} from './sketch.js';

const hllOf = (values: readonly string[]) => {
  const hll = new HyperLogLog(ROLLUP_HLL_PRECISION);
  for (const v of values) hll.add(v);
  return hll;
};

describe('visitor sketches', () => {
  it('unpack and pack are inverse on the analytics HyperLogLog’s registers', () => {
    fc.assert(
      fc.property(fc.array(fc.string(), { maxLength: 3000 }), (values) => {
        const packed = hllOf(values).exportRegisters();
        expect(packRegisters(unpackRegisters(packed))).toEqual(packed);
      }),
      { numRuns: 50 },
    );
  });

  it('stored sparse for a small minute, dense for a busy one; decoding gives the registers back', () => {
    const small = unpackRegisters(hllOf(['a', 'b', 'c']).exportRegisters());
    const busy = unpackRegisters(hllOf(Array.from({ length: 5000 }, (_, i) => `v${i}`)).exportRegisters());
    expect(encodeSketch(small).length).toBe(1 + 2 * 3);
    expect(encodeSketch(busy).length).toBe(1 + PACKED_BYTES);
    for (const r of [small, busy, new Uint8Array(REGISTERS)]) {
      expect(decodeSketchInto(encodeSketch(r), new Uint8Array(REGISTERS))).toEqual(r);
    }
  });

  it('decoding into registers is the union: the estimate of the analytics HyperLogLog of all values', () => {
    const a = Array.from({ length: 800 }, (_, i) => `a${i}`);
    const b = Array.from({ length: 800 }, (_, i) => `a${i + 400}`);
    const union = new Uint8Array(REGISTERS);
    decodeSketchInto(encodeSketch(unpackRegisters(hllOf(a).exportRegisters())), union);
    decodeSketchInto(encodeSketch(unpackRegisters(hllOf(b).exportRegisters())), union);
    expect(estimateRegisters(union)).toBe(hllOf([...a, ...b]).estimate());
    expect(Math.abs(estimateRegisters(union) - 1200) / 1200).toBeLessThan(0.1);
  });

  it('a packed array of another precision, or an unknown tag, adds nothing', () => {
    expect(unpackRegisters(new HyperLogLog(12).exportRegisters())).toEqual(new Uint8Array(REGISTERS));
    expect(decodeSketchInto(Uint8Array.of(7, 1, 2), new Uint8Array(REGISTERS))).toEqual(new Uint8Array(REGISTERS));
  });
});
