import { hashString } from './hash.js';

/** Default precision: 2^14 one-byte registers (16 KB), standard error 1.04/√16384 ≈ 0.81 %. */
export const HLL_PRECISION = 14;

/**
 * A HyperLogLog distinct counter (Flajolet et al. 2007) with the small-range
 * (linear counting) correction. Constant memory: 2^precision bytes. Adding is
 * O(1); estimating is O(registers).
 */
export class HyperLogLog {
  readonly #p: number;
  readonly #registers: Uint8Array;
  readonly #alphaMM: number;

  /** @param precision register index bits, 4..16 (default {@link HLL_PRECISION}) */
  constructor(precision = HLL_PRECISION) {
    this.#p = precision;
    const m = 1 << precision;
    this.#registers = new Uint8Array(m);
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
    if (rank > (this.#registers[index] as number)) this.#registers[index] = rank;
  }

  /** The estimated number of distinct values added (rounded). */
  estimate(): number {
    const registers = this.#registers;
    const m = registers.length;
    let sum = 0;
    let zeros = 0;
    for (let i = 0; i < m; i++) {
      const r = registers[i] as number;
      sum += 2 ** -r;
      if (r === 0) zeros++;
    }
    const raw = this.#alphaMM / sum;
    if (raw <= 2.5 * m && zeros > 0) return Math.round(m * Math.log(m / zeros));
    return Math.round(raw);
  }
}
