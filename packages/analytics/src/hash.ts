/**
 * MurmurHash3 (x86, 32-bit) over the UTF-16 code units of a string: fast, no
 * allocation, well mixed (used by the HyperLogLog and the GeoIP cache).
 */
export function hashString(value: string, seed = 0x9747b28c): number {
  let h = seed | 0;
  for (let i = 0; i < value.length; i++) {
    let k = value.charCodeAt(i);
    k = Math.imul(k, 0xcc9e2d51);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, 0x1b873593);
    h ^= k;
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  h ^= value.length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
