declare module 'tdigest' {
  /** The `tdigest` package's streaming percentile sketch. */
  export class TDigest {
    constructor(delta?: number | false, K?: number, CX?: number);
    n: number;
    push(x: number | number[], n?: number): void;
    percentile(p: number): number | undefined;
    percentile(p: number[]): Array<number | undefined>;
    compress(): void;
    size(): number;
    /** The centroids, a red-black tree ordered by mean. */
    centroids: { each(visit: (c: { mean: number; n: number }) => void): void };
  }
}
