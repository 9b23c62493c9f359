import { TDigest } from 'tdigest';

/** Observations held before they are merged into the digest (spec §2.4 rule 4). */
export const PENDING_LIMIT = 100;

/**
 * TDigest compression factor: at most ~1/delta centroids of mass. 0.01 (the
 * package default) keeps percentiles within about 1 % on 100,000 samples.
 */
export const TDIGEST_DELTA = 0.01;

/** The four percentiles of one Web Vitals metric. */
export interface Percentiles {
  p50: number;
  p75: number;
  p95: number;
  p99: number;
}

/**
 * The plain-data image of a {@link VitalDigest} (structured-clone safe): the
 * digest's centroids in mean order and the observations still pending.
 */
export interface VitalState {
  /** Centroid means, ascending. */
  means: Float64Array;
  /** Centroid weights (observations), in the same order. */
  weights: Float64Array;
  /** Observations not yet merged into the digest. */
  pending: Float64Array;
}

const ZERO: Readonly<Percentiles> = Object.freeze({ p50: 0, p75: 0, p95: 0, p99: 0 });
const QUANTILES = [0.5, 0.75, 0.95, 0.99];

/**
 * One Web Vitals metric: a TDigest over every flushed observation since start
 * plus a pending buffer of up to {@link PENDING_LIMIT} observations, merged
 * when full and at each aggregation cycle ({@link flush}). Reading never
 * flushes, so percentiles lag by at most 100 observations; all are 0.0 until
 * something has been flushed. The digest is created on the first flush.
 */
export class VitalDigest {
  #digest: TDigest | undefined;
  readonly #pending = new Float64Array(PENDING_LIMIT);
  #pendingCount = 0;
  #cached: Percentiles = ZERO;
  /** The digest's centroids as of the last flush, built at the first export after it. */
  #centroids: { means: Float64Array; weights: Float64Array } | undefined;

  /** Observations merged into the digest so far. */
  get flushed(): number {
    return this.#digest?.n ?? 0;
  }

  /** Observations waiting in the buffer. */
  get pending(): number {
    return this.#pendingCount;
  }

  /** Buffers one observation; merges the buffer when it reaches the limit. */
  observe(value: number): void {
    this.#pending[this.#pendingCount++] = value;
    if (this.#pendingCount >= PENDING_LIMIT) this.flush();
  }

  /** Merges the pending buffer into the digest (the aggregation cycle). */
  flush(): void {
    if (this.#pendingCount === 0) return;
    this.#digest ??= new TDigest(TDIGEST_DELTA);
    const digest = this.#digest;
    for (let i = 0; i < this.#pendingCount; i++) digest.push(this.#pending[i] as number);
    this.#pendingCount = 0;
    this.#centroids = undefined;
    digest.compress();
    const [p50, p75, p95, p99] = digest.percentile(QUANTILES);
    this.#cached = { p50: p50 ?? 0, p75: p75 ?? 0, p95: p95 ?? 0, p99: p99 ?? 0 };
  }

  /** The percentiles as of the last flush (never flushes). */
  percentiles(): Percentiles {
    return { ...this.#cached };
  }

  /** A copy of the centroids and the pending observations (never flushes). */
  exportState(): VitalState {
    if (this.#centroids === undefined) {
      const size = this.#digest?.size() ?? 0;
      const means = new Float64Array(size);
      const weights = new Float64Array(size);
      let i = 0;
      this.#digest?.centroids.each((c) => {
        means[i] = c.mean;
        weights[i++] = c.n;
      });
      this.#centroids = { means, weights };
    }
    return {
      means: this.#centroids.means.slice(),
      weights: this.#centroids.weights.slice(),
      pending: this.#pending.slice(0, this.#pendingCount),
    };
  }

  /**
   * The percentiles of the union of `states`: every digest's centroids and
   * every pending observation (weight 1), sorted by mean, equal means joined,
   * read with the `tdigest` package's rule (a centroid's mass is centred on
   * its mean; linear between neighbouring centroids). One state with nothing
   * pending gives exactly its own {@link percentiles}. Each centroid keeps the
   * size bound of the digest it came from, which is tighter relative to the
   * larger union: within 5 % of exact over 100,000 samples split in 3, like
   * one digest (test). All 0.0 with no observation.
   */
  static mergedPercentiles(states: readonly VitalState[]): Percentiles {
    // Sorted runs: each digest's centroids (already in mean order), each pending buffer sorted
    // (weight 1); merged two by two.
    let runs: Run[] = [];
    for (const s of states) {
      if (s.means.length !== s.weights.length) throw new RangeError('centroid means and weights differ in length');
      if (s.means.length > 0) runs.push({ means: s.means, weights: s.weights });
      if (s.pending.length > 0) {
        runs.push({ means: s.pending.slice().sort(), weights: new Float64Array(s.pending.length).fill(1) });
      }
    }
    if (runs.length === 0) return { ...ZERO };
    while (runs.length > 1) {
      const next: Run[] = [];
      for (let i = 0; i + 1 < runs.length; i += 2) next.push(mergeRuns(runs[i] as Run, runs[i + 1] as Run));
      if (runs.length % 2 === 1) next.push(runs[runs.length - 1] as Run);
      runs = next;
    }
    const { means, weights } = runs[0] as Run;
    // Join equal means (tdigest keeps one centroid per mean) and centre each centroid's mass on its mean.
    const mean: number[] = [];
    const centre: number[] = [];
    let total = 0;
    for (let i = 0; i < means.length; ) {
      const m = means[i] as number;
      let w = 0;
      for (; i < means.length && means[i] === m; i++) w += weights[i] as number;
      mean.push(m);
      centre.push(total + w / 2);
      total += w;
    }
    const [p50, p75, p95, p99] = QUANTILES.map((q) => quantile(mean, centre, total * q)) as [
      number,
      number,
      number,
      number,
    ];
    return { p50, p75, p95, p99 };
  }
}

/** Centroids in mean order. */
interface Run {
  means: Float64Array;
  weights: Float64Array;
}

/** Two runs merged in mean order. */
function mergeRuns(a: Run, b: Run): Run {
  const n = a.means.length + b.means.length;
  const means = new Float64Array(n);
  const weights = new Float64Array(n);
  let i = 0;
  let j = 0;
  for (let k = 0; k < n; k++) {
    if (j >= b.means.length || (i < a.means.length && (a.means[i] as number) <= (b.means[j] as number))) {
      means[k] = a.means[i] as number;
      weights[k] = a.weights[i++] as number;
    } else {
      means[k] = b.means[j] as number;
      weights[k] = b.weights[j++] as number;
    }
  }
  return { means, weights };
}

/**
 * The value at cumulative weight `h` (the `tdigest` package's `_percentile`):
 * the centroids whose centres bracket `h`, interpolated linearly; the
 * outermost mean beyond the first or last centre.
 */
function quantile(mean: readonly number[], centre: readonly number[], h: number): number {
  // The first centroid whose centre is above h.
  let lo = 0;
  let hi = centre.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((centre[mid] as number) > h) hi = mid;
    else lo = mid + 1;
  }
  const upper = lo;
  const lower = lo - 1;
  if (lower < 0) return mean[upper] as number;
  if (upper >= centre.length || centre[lower] === h) return mean[lower] as number;
  const lm = mean[lower] as number;
  const lc = centre[lower] as number;
  return lm + ((h - lc) * ((mean[upper] as number) - lm)) / ((centre[upper] as number) - lc);
}
