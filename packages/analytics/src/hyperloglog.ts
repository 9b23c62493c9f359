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

  /** The value of register `i`. */
  #register(i: number): number {
    const bit = i * REGISTER_BITS;
    const at = bit >>> 3;
    const r = this.#registers;
    return (((r[at] as number) | ((r[at + 1] as number) << 8)) >>> (bit & 7)) & REGISTER_MASK;
  }

  /** The estimated number of distinct values added (rounded). */
  estimate(): number {
    const m = this.#m;
    let sum = 0;
    let zeros = 0;
    for (let i = 0; i < m; i++) {
      const r = this.#register(i);
      sum += 2 ** -r;
      if (r === 0) zeros++;
    }
    const raw = this.#alphaMM / sum;
    if (raw <= 2.5 * m && zeros > 0) return Math.round(m * Math.log(m / zeros));
    return Math.round(raw);
  }
}
