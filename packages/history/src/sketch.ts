import { HyperLogLog, ROLLUP_HLL_PRECISION } from '@proxyd/analytics';

/** Registers of a rollup's visitor sketch: 2^{@link ROLLUP_HLL_PRECISION}. */
export const REGISTERS = 1 << ROLLUP_HLL_PRECISION;
/** Bytes of the packed form (`HyperLogLog.exportRegisters`): 5 bits a register, one spare byte. */
export const PACKED_BYTES = ((REGISTERS * 5) >> 3) + 1;
const DENSE = 0;
const SPARSE = 1;

/**
 * One register a byte, unpacked from the packed form the analytics package
 * exports (register i: the 5 bits at bit i × 5, little-endian). A packed
 * array of another length (another precision) is an empty sketch.
 */
export function unpackRegisters(packed: Uint8Array, into: Uint8Array = new Uint8Array(REGISTERS)): Uint8Array {
  if (packed.length !== PACKED_BYTES) return into;
  for (let i = 0; i < REGISTERS; i++) {
    const bit = i * 5;
    const at = bit >>> 3;
    const word = (packed[at] as number) | ((packed[at + 1] as number) << 8);
    const r = (word >>> (bit & 7)) & 31;
    if (r > (into[i] as number)) into[i] = r;
  }
  return into;
}

/** The packed form of one-byte registers (the inverse of {@link unpackRegisters}). */
export function packRegisters(registers: Uint8Array): Uint8Array {
  const packed = new Uint8Array(PACKED_BYTES);
  for (let i = 0; i < REGISTERS; i++) {
    const r = registers[i] as number;
    if (r === 0) continue;
    const bit = i * 5;
    const at = bit >>> 3;
    const word = (r & 31) << (bit & 7);
    packed[at] = (packed[at] as number) | (word & 0xff);
    packed[at + 1] = (packed[at + 1] as number) | (word >>> 8);
  }
  return packed;
}

/**
 * The stored form of a sketch: a tag byte, then either the packed registers
 * (dense, 1 + 641 bytes) or, when fewer than about a third of the registers
 * are set (a small site's minute), two bytes per set register (index × 32 +
 * value, little-endian). Most rows of most sites are sparse.
 */
export function encodeSketch(registers: Uint8Array): Uint8Array {
  let set = 0;
  for (let i = 0; i < REGISTERS; i++) if (registers[i] !== 0) set++;
  if (2 * set >= PACKED_BYTES) {
    const out = new Uint8Array(1 + PACKED_BYTES);
    out[0] = DENSE;
    out.set(packRegisters(registers), 1);
    return out;
  }
  const out = new Uint8Array(1 + 2 * set);
  out[0] = SPARSE;
  let at = 1;
  for (let i = 0; i < REGISTERS; i++) {
    const r = registers[i] as number;
    if (r === 0) continue;
    const v = (i << 5) | r;
    out[at++] = v & 0xff;
    out[at++] = v >>> 8;
  }
  return out;
}

/** Adds a stored sketch's registers into `into` (register max); an unknown tag adds nothing. */
export function decodeSketchInto(stored: Uint8Array, into: Uint8Array): Uint8Array {
  if (stored[0] === DENSE) return unpackRegisters(stored.subarray(1), into);
  if (stored[0] !== SPARSE) return into;
  for (let at = 1; at + 1 < stored.length; at += 2) {
    const v = (stored[at] as number) | ((stored[at + 1] as number) << 8);
    const i = v >>> 5;
    const r = v & 31;
    if (i < REGISTERS && r > (into[i] as number)) into[i] = r;
  }
  return into;
}

/** The estimated distinct count of one-byte registers (the analytics package's estimator). */
export function estimateRegisters(registers: Uint8Array): number {
  return HyperLogLog.merge([packRegisters(registers)], ROLLUP_HLL_PRECISION).estimate();
}
