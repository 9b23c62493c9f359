/** Edit distance (insertions, deletions, substitutions, adjacent swaps) between two short strings. */
export function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[] = new Array(rows * cols).fill(0);
  for (let i = 0; i < rows; i++) d[i * cols] = i;
  for (let j = 0; j < cols; j++) d[j] = j;
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(
        (d[(i - 1) * cols + j] as number) + 1,
        (d[i * cols + j - 1] as number) + 1,
        (d[(i - 1) * cols + j - 1] as number) + cost,
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        v = Math.min(v, (d[(i - 2) * cols + j - 2] as number) + 1);
      }
      d[i * cols + j] = v;
    }
  }
  return d[rows * cols - 1] as number;
}

/** The known name nearest to `word`, if it is close enough to be a typo (distance ≤ max(2, a third of its length)). */
export function nearest(word: string, known: Iterable<string>): string | null {
  if (word.length > 64) return null;
  const lower = word.toLowerCase();
  let best: string | null = null;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const k of known) {
    const dist = editDistance(lower, k);
    if (dist < bestDistance) {
      best = k;
      bestDistance = dist;
    }
  }
  return best !== null && bestDistance <= Math.max(2, Math.floor(word.length / 3)) ? best : null;
}
