/** Bytes of `</head` / `</body`: the longest partial tag carried between chunks. */
export const TAG_PREFIX_LENGTH = 6;

function lower(c: number): number {
  return c >= 65 && c <= 90 ? c + 32 : c;
}

function isTagEnd(c: number): boolean {
  // `>`, whitespace or `/` ends the tag name (so `</header>` is not `</head>`).
  return c === 62 || c === 32 || c === 9 || c === 10 || c === 13 || c === 12 || c === 47;
}

/**
 * The offset of the first `</head>` or `</body>` (ASCII case-insensitive,
 * attributes or whitespace allowed) in `data` at or after `from`, or -1. A
 * tag whose name ends the buffer is not matched (its end is not seen yet):
 * callers carry the last {@link TAG_PREFIX_LENGTH} bytes into the next chunk.
 */
export function findClosingTag(data: Uint8Array, from = 0): number {
  const end = data.length - TAG_PREFIX_LENGTH;
  for (let i = data.indexOf(60, from); i >= 0 && i < end; i = data.indexOf(60, i + 1)) {
    if (data[i + 1] !== 47) continue;
    const a = lower(data[i + 2] as number);
    const b = lower(data[i + 3] as number);
    const c = lower(data[i + 4] as number);
    const d = lower(data[i + 5] as number);
    const head = a === 104 && b === 101 && c === 97 && d === 100; // head
    const body = a === 98 && b === 111 && c === 100 && d === 121; // body
    if ((head || body) && isTagEnd(data[i + 6] as number)) return i;
  }
  return -1;
}
