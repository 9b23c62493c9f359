import { hashString } from './hash.js';

/** Default precision: 2^14 registers (10 KB packed), standard error 1.04/√16384 ≈ 0.81 %. */
export const HLL_PRECISION = 14;
/** Bits per register: a rank is at most 32 - precision + 1 ≤ 29 (32-bit hashes), so 5 bits hold it. */
const REGISTER_BITS = 5;
const REGISTER_MASK = (1 << REGISTER_BITS) - 1;

/**
 * A HyperLogLog distinct counter (Flajolet et al. 2007) with the small-range
 * (linear counting) correction. Constant memory: 2^precision registers of 5
 * bits, packed (10 KB at the default precision, not 16 KB as one byte
 * each). Adding is O(1); estimating is O(registers).
 */
export class HyperLogLog {
  readonly #p: number;
  /** Register i is the 5 bits at bit i × 5 (little-endian); one spare byte so every read can take two bytes. */
  readonly #registers: Uint8Array;
  readonly #m: number;
  readonly #alphaMM: number;

  /** @param precision register index bits, 4..16 (default {@link HLL_PRECISION}) */
  constructor(precision = HLL_PRECISION) {
    if (!Number.isInteger(precision) || precision < 4 || precision > 16) throw new RangeError(`precision ${precision}`);
    this.#p = precision;
    const m = 1 << precision;
    this.#m = m;
    this.#registers = new Uint8Array(((m * REGISTER_BITS) >> 3) + 1);
    const alpha = m >= 128 ? 0.7213 / (1 + 1.079 / m) : m === 64 ? 0.709 : m === 32 ? 0.697 : 0.673;
    this.#alphaMM = alpha * m * m;
  }

  /** Memory of the registers, bytes. */
  get bytes(): number {
    return this.#registers.length;
  }

  /** Adds a string value (e.g. a client IP). */
  add(value: string): void {
    this.addHash(hashString(value));
  }

  /** Adds a precomputed 32-bit hash. */
  addHash(hash: number): void {
    const p = this.#p;
    const index = hash >>> (32 - p);
    // The rank of the remaining 32 - p bits; a guard bit bounds it.
    const rest = (hash << p) | (1 << (p - 1));
    const rank = Math.clz32(rest) + 1;
    const bit = index * REGISTER_BITS;
    const at = bit >>> 3;
    const shift = bit & 7;
    const r = this.#registers;
    const word = (r[at] as number) | ((r[at + 1] as number) << 8);
    if (rank <= ((word >>> shift) & REGISTER_MASK)) return;
    const next = (word & ~(REGISTER_MASK << shift)) | (rank << shift);
    r[at] = next & 0xff;
    r[at + 1] = next >>> 8;
  }

  /** Register index bits. */
  get precision(): number {
    return this.#p;
  }

  /** A copy of the packed registers (register i: the 5 bits at bit i × 5, little-endian). */
  exportRegisters(): Uint8Array {
    return this.#registers.slice();
  }

  /**
   * The HyperLogLog of the union: register by register, the largest of
   * `registers` (from {@link exportRegisters}, same precision). The same
   * registers, so the same estimate, as one HyperLogLog that added every value.
   */
  static merge(registers: readonly Uint8Array[], precision = HLL_PRECISION): HyperLogLog {
    const merged = new HyperLogLog(precision);
    const out = merged.#registers;
    const max = new Uint8Array(merged.#m);
    for (const packed of registers) {
      if (packed.length !== out.length) throw new RangeError(`${packed.length} register bytes, want ${out.length}`);
      unpack(packed, max, true);
    }
    for (let at = 0, i = 0; i < max.length; at += 5, i += 8) {
      const lo =
        (max[i] as number) |
        ((max[i + 1] as number) << 5) |
        ((max[i + 2] as number) << 10) |
        ((max[i + 3] as number) << 15) |
        ((max[i + 4] as number) << 20) |
        ((max[i + 5] as number) << 25) |
        ((max[i + 6] as number) << 30);
      out[at] = lo & 0xff;
      out[at + 1] = (lo >>> 8) & 0xff;
      out[at + 2] = (lo >>> 16) & 0xff;
      out[at + 3] = (lo >>> 24) & 0xff;
      out[at + 4] = ((max[i + 6] as number) >>> 2) | ((max[i + 7] as number) << 3);
    }
    return merged;
  }

  /** The estimated number of distinct values added (rounded). */
  estimate(): number {
    const m = this.#m;
    if (scratch.length < m) scratch = new Uint8Array(m);
    const registers = scratch.subarray(0, m);
    registers.fill(0);
    unpack(this.#registers, registers, false);
    let sum = 0;
    let zeros = 0;
    for (let i = 0; i < m; i++) {
      const r = registers[i] as number;
      sum += INVERSE_POWERS[r] as number;
      if (r === 0) zeros++;
    }
    const raw = this.#alphaMM / sum;
    if (raw <= 2.5 * m && zeros > 0) return Math.round(m * Math.log(m / zeros));
    return Math.round(raw);
  }
}

/** 2^-r for every register value r: the estimate's terms. */
const INVERSE_POWERS = Float64Array.from({ length: REGISTER_MASK + 1 }, (_, r) => 2 ** -r);

/** One byte per register, reused by every {@link HyperLogLog.estimate} (they never nest). */
let scratch = new Uint8Array(0);

/**
 * Unpacks 5-bit registers into `out` (one byte each), 8 registers from every
 * 5 bytes (a register count is a multiple of 8); with `max`, keeps the larger
 * of the value already in `out` and the unpacked one.
 */
function unpack(packed: Uint8Array, out: Uint8Array, max: boolean): void {
  for (let at = 0, i = 0; i < out.length; at += 5, i += 8) {
    const lo =
      ((packed[at] as number) |
        ((packed[at + 1] as number) << 8) |
        ((packed[at + 2] as number) << 16) |
        ((packed[at + 3] as number) << 24)) >>>
      0;
    const hi = packed[at + 4] as number;
    if (lo === 0 && hi === 0) continue;
    const r0 = lo & REGISTER_MASK;
    const r1 = (lo >>> 5) & REGISTER_MASK;
    const r2 = (lo >>> 10) & REGISTER_MASK;
    const r3 = (lo >>> 15) & REGISTER_MASK;
    const r4 = (lo >>> 20) & REGISTER_MASK;
    const r5 = (lo >>> 25) & REGISTER_MASK;
    const r6 = (lo >>> 30) | ((hi & 7) << 2);
    const r7 = hi >>> 3;
    if (max) {
      if (r0 > (out[i] as number)) out[i] = r0;
      if (r1 > (out[i + 1] as number)) out[i + 1] = r1;
      if (r2 > (out[i + 2] as number)) out[i + 2] = r2;
      if (r3 > (out[i + 3] as number)) out[i + 3] = r3;
      if (r4 > (out[i + 4] as number)) out[i + 4] = r4;
      if (r5 > (out[i + 5] as number)) out[i + 5] = r5;
      if (r6 > (out[i + 6] as number)) out[i + 6] = r6;
      if (r7 > (out[i + 7] as number)) out[i + 7] = r7;
    } else {
      out[i] = r0;
      out[i + 1] = r1;
      out[i + 2] = r2;
      out[i + 3] = r3;
      out[i + 4] = r4;
      out[i + 5] = r5;
      out[i + 6] = r6;
      out[i + 7] = r7;
    }
  }
}
