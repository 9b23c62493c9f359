import { describe, expect, it } from 'vitest';
import { CacheIndex, type SharedCacheEntry } from './cache-index.js';

// Issue 32: the node's one response-cache index (kept by the primary).

let files = 0;
function entry(key: string, size: number, site = 1, maxBytes = 1000): SharedCacheEntry {
  return {
    site,
    maxBytes,
    key,
    base: key.split('\u0000')[0] as string,
    file: `/cache/${++files}`,
    status: 200,
    headers: { 'content-length': '1' },
    storedAt: 0,
    baseAge: 0,
    expiresAt: Number.MAX_SAFE_INTEGER,
    size,
    bodyBytes: 1,
  };
}

function indexWithRemovals() {
  const removed: string[] = [];
  const index = new CacheIndex({ removeFile: (file) => removed.push(file) });
  return { index, removed };
}

describe('CacheIndex', () => {
  it('a stored entry is sent to every copy; a later one of the same key replaces it and its file goes', () => {
    const { index, removed } = indexWithRemovals();
    const first = entry('a.test/p', 100);
    expect(index.store(first)).toEqual({ set: [first], deleted: [] });
    const second = entry('a.test/p', 120);
    // The copies replace the key's entry with the newer one: no deletion to send.
    expect(index.store(second)).toEqual({ set: [second], deleted: [] });
    expect(removed).toEqual([first.file]);
    expect(index.size).toBe(1);
    expect(index.bytesOf(1)).toBe(120);
  });

  it("holds a site's entries within its max_size: the least recently used leave, files removed", () => {
    const { index, removed } = indexWithRemovals();
    const a = entry('a.test/1', 400);
    const b = entry('a.test/2', 400);
    index.store(a);
    index.store(b);
    // A hit on a (reported by a node) makes b the least recently used.
    index.touch(['a.test/1']);
    const c = entry('a.test/3', 400);
    const update = index.store(c);
    expect(update.set).toEqual([c]);
    expect(update.deleted).toEqual([{ key: b.key, file: b.file }]);
    expect(removed).toEqual([b.file]);
    expect(index.bytesOf(1)).toBe(800);
    expect(index.bytesOf(1)).toBeLessThanOrEqual(1000);
    expect(
      index
        .entries()
        .map((e) => e.key)
        .sort(),
    ).toEqual(['a.test/1', 'a.test/3']);
  });

  it('the bound is per site: one site filling its cache evicts none of another', () => {
    const { index } = indexWithRemovals();
    index.store(entry('b.test/1', 900, 2));
    for (let i = 0; i < 10; i++) index.store(entry(`a.test/${i}`, 300, 1));
    expect(index.bytesOf(1)).toBe(900);
    expect(index.bytesOf(2)).toBe(900);
    expect(index.entries().some((e) => e.key === 'b.test/1')).toBe(true);
  });

  it('holds the bound whatever the order of stores from several nodes (property: 2,000 random stores)', () => {
    const { index, removed } = indexWithRemovals();
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const live = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      const site = 1 + random(3);
      const e = entry(`s${site}.test/${random(40)}`, 1 + random(500), site);
      const update = index.store(e);
      for (const set of update.set) live.add(set.file);
      for (const gone of update.deleted) live.delete(gone.file);
      if (random(4) === 0) index.touch([`s${site}.test/${random(40)}`]);
      for (const s of [1, 2, 3]) expect(index.bytesOf(s)).toBeLessThanOrEqual(1000);
    }
    // Every file the index let go was removed; every file it holds is live in the copies.
    const held = new Set(index.entries().map((e) => e.file));
    expect(held.size).toBe(index.size);
    for (const file of held) expect(removed).not.toContain(file);
    const sum = index.entries().reduce((n, e) => n + e.size, 0);
    expect(sum).toBe(index.bytesOf(1) + index.bytesOf(2) + index.bytesOf(3));
    expect(removed.length + held.size).toBe(2000);
  });

  it('refuses an entry over its bound, removing its file and telling the copies to drop it', () => {
    const { index, removed } = indexWithRemovals();
    const big = entry('a.test/big', 1001);
    expect(index.store(big)).toEqual({ set: [], deleted: [{ key: big.key, file: big.file }] });
    expect(removed).toEqual([big.file]);
    expect(index.size).toBe(0);
  });

  it('a purge removes every coding of {host}/{path} (host case-insensitive, leading / added)', () => {
    const { index, removed } = indexWithRemovals();
    const identity = entry('a.test/p?x=1', 10);
    const gzip = entry('a.test/p?x=1\u0000gzip', 10);
    const other = entry('a.test/q', 10);
    for (const e of [identity, gzip, other]) index.store(e);
    const { removed: had, update } = index.purge('A.TEST/p?x=1');
    expect(had).toBe(true);
    expect(update.deleted.map((d) => d.key).sort()).toEqual([identity.key, gzip.key].sort());
    expect(removed.sort()).toEqual([identity.file, gzip.file].sort());
    expect(index.purge('a.test/p?x=1').removed).toBe(false);
    index.store(entry('b.test/', 10));
    expect(index.purge('b.test').removed).toBe(true);
    expect(index.entries().map((e) => e.key)).toEqual([other.key]);
  });

  it("a released site's entries go, and a store a slow node makes for it afterwards is refused", () => {
    const { index, removed } = indexWithRemovals();
    const a = entry('a.test/1', 10, 5);
    index.store(a);
    index.store(entry('b.test/1', 10, 6));
    expect(index.release([5]).deleted).toEqual([{ key: a.key, file: a.file }]);
    const late = entry('a.test/2', 10, 5);
    expect(index.store(late).set).toEqual([]);
    expect(removed).toEqual([a.file, late.file]);
    expect(index.entries().map((e) => e.key)).toEqual(['b.test/1']);
  });
});
