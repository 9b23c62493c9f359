import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm, unlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { CacheIndex, type CacheIndexUpdate } from '@proxyd/cluster';
import type { CacheConfig } from '@proxyd/model';
import { SharedCache, type SharedEntryData } from '@proxyd/proxy-core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

// Issue 32: the workers' side of the node's one response cache: two copies
// of the index (two workers) fed by one CacheIndex (the primary), bodies in
// real files. The relay below stands in for the IPC channels: it carries
// each message in order, as a channel does, and is drained by `deliver()`.

const CONFIG: CacheConfig = { max_size_bytes: 64 * 1024, ttl_ms: 600_000 };
const site = { cache: CONFIG };

interface Worker {
  cache: SharedCache;
  inbox: CacheIndexUpdate[];
}

let dir: string;
let index: CacheIndex;
let toPrimary: (() => void)[];
let workers: Worker[];

function worker(n: number): Worker {
  const inbox: CacheIndexUpdate[] = [];
  const cache = new SharedCache({
    dir,
    prefix: `w${n}`,
    siteNumber: (s) => (s === site ? 7 : undefined),
    link: {
      stored: (entry) => toPrimary.push(() => broadcast(index.store(entry))),
      touched: (keys) => toPrimary.push(() => index.touch(keys)),
      released: (sites) => toPrimary.push(() => broadcast(index.release(sites))),
    },
    touchIntervalMs: 1,
  });
  cache.retain(new Set([site]));
  return { cache, inbox };
}

function broadcast(update: CacheIndexUpdate): void {
  for (const w of workers) w.inbox.push(update);
}

/** Carries every message sent so far: the workers' to the index, then the index's to the workers. */
function deliver(): void {
  while (toPrimary.length > 0) (toPrimary.shift() as () => void)();
  for (const w of workers) while (w.inbox.length > 0) w.cache.apply(w.inbox.shift() as CacheIndexUpdate);
}

function response(body: Buffer, now = Date.now()) {
  return {
    status: 200,
    headers: { 'content-type': 'text/plain', 'content-length': String(body.length) },
    body,
    storedAt: now,
    baseAge: 0,
    expiresAt: now + 60_000,
    size: body.length + 600,
  };
}

/** The body a worker answers for `key`, read as a hit does (at once, or asynchronously for a big one). */
async function hit(w: Worker, key: string): Promise<Buffer | null> {
  const cache = w.cache.forSite(site, CONFIG);
  const entry = cache?.get(key);
  if (cache === null || cache === undefined || entry === undefined) return null;
  const body = cache.body(entry);
  if (body !== undefined) return body;
  return await new Promise((resolve) => cache.readBody(entry, resolve));
}

const filesIn = async () => (await readdir(dir)).sort();

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'shared-cache-test-'));
  toPrimary = [];
  const removals: Promise<unknown>[] = [];
  index = new CacheIndex({ removeFile: (file) => removals.push(unlink(file)) });
  workers = [worker(0), worker(1)];
});

afterEach(async () => {
  for (const w of workers) w.cache.close();
  await rm(dir, { recursive: true, force: true });
});

describe('SharedCache: one response cache for the workers of a node', () => {
  it('a response stored by one worker is a hit on the other, read from one file', async () => {
    const [a, b] = workers as [Worker, Worker];
    const body = Buffer.from('hello from the upstream');
    expect(a.cache.forSite(site, CONFIG)?.set('a.test/p', response(body))).toBe(true);
    // The worker that filled it has it at once; the other once the index sent it.
    expect(await hit(a, 'a.test/p')).toEqual(body);
    expect(await hit(b, 'a.test/p')).toBeNull();
    deliver();
    expect(await hit(b, 'a.test/p')).toEqual(body);
    expect(await filesIn()).toHaveLength(1);
  });

  it('a big body (over the synchronous read size) is read asynchronously, whole', async () => {
    const [a, b] = workers as [Worker, Worker];
    const big = Buffer.alloc(200 * 1024, 7);
    const cache = a.cache.forSite(site, { ...CONFIG, max_size_bytes: 4 * 1024 * 1024 });
    expect(cache?.set('a.test/big', response(big))).toBe(true);
    // Written asynchronously: stored once the file is complete.
    for (let i = 0; i < 200 && toPrimary.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
    deliver();
    const other = b.cache.forSite(site, CONFIG);
    const entry = other?.get('a.test/big');
    expect(entry).toBeDefined();
    // Not read at once (it would hold the event loop): the hit reads it asynchronously.
    expect(other?.body(entry as never)).toBeUndefined();
    expect((await hit(b, 'a.test/big'))?.equals(big)).toBe(true);
  });

  it('two workers filling one key at once: the last stored wins on both, the other file is removed, no body is mixed', async () => {
    const [a, b] = workers as [Worker, Worker];
    const fromA = Buffer.alloc(5000, 'a');
    const fromB = Buffer.alloc(5000, 'b');
    a.cache.forSite(site, CONFIG)?.set('a.test/race', response(fromA));
    b.cache.forSite(site, CONFIG)?.set('a.test/race', response(fromB));
    // Before the index answers, each worker serves its own complete body.
    expect(await hit(a, 'a.test/race')).toEqual(fromA);
    expect(await hit(b, 'a.test/race')).toEqual(fromB);
    deliver();
    expect(await hit(a, 'a.test/race')).toEqual(fromB);
    expect(await hit(b, 'a.test/race')).toEqual(fromB);
    await new Promise((r) => setTimeout(r, 20));
    const files = await filesIn();
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(/^w1-/);
    // No temporary file is ever left (written under another name, then renamed).
    expect(files.some((f) => f.endsWith('.tmp'))).toBe(false);
  });

  it("the site's bound holds for the node: what both workers stored together stays within max_size", async () => {
    const [a, b] = workers as [Worker, Worker];
    // 20 bodies of 6000 bytes (charged 6600 each), filled alternately by the two workers: 2x the 64 KiB bound.
    for (let i = 0; i < 20; i++) {
      const w = i % 2 === 0 ? a : b;
      w.cache.forSite(site, CONFIG)?.set(`a.test/${i}`, response(Buffer.alloc(6000, i)));
      deliver();
    }
    expect(index.bytesOf(7)).toBeLessThanOrEqual(CONFIG.max_size_bytes);
    expect(index.size).toBe(9);
    await new Promise((r) => setTimeout(r, 20));
    expect(await filesIn()).toHaveLength(9);
    for (const w of workers) {
      const held: number[] = [];
      for (let i = 0; i < 20; i++) if ((await hit(w, `a.test/${i}`)) !== null) held.push(i);
      expect(held).toEqual([11, 12, 13, 14, 15, 16, 17, 18, 19]);
    }
    expect(a.cache.size).toBe(9);
    expect(b.cache.size).toBe(9);
  });

  it('hits are reported to the index, so the entries served stay when others are evicted', async () => {
    const [a, b] = workers as [Worker, Worker];
    for (let i = 0; i < 9; i++) a.cache.forSite(site, CONFIG)?.set(`a.test/${i}`, response(Buffer.alloc(6000)));
    deliver();
    // Worker b serves entry 0: its hit reaches the index (touchIntervalMs 1 here, a second by default).
    expect(await hit(b, 'a.test/0')).not.toBeNull();
    await new Promise((r) => setTimeout(r, 10));
    deliver();
    a.cache.forSite(site, CONFIG)?.set('a.test/new', response(Buffer.alloc(6000)));
    deliver();
    expect(await hit(b, 'a.test/0')).not.toBeNull();
    expect(await hit(b, 'a.test/1')).toBeNull();
  });

  it('a purge removes every coding from a copy; an entry whose file is gone is a miss and is dropped', async () => {
    const [a, b] = workers as [Worker, Worker];
    const cache = a.cache.forSite(site, CONFIG);
    cache?.set('a.test/p', response(Buffer.from('identity')));
    cache?.set('a.test/p\u0000gzip', response(Buffer.from('gzipped')));
    deliver();
    expect(b.cache.purge('a.test/p')).toBe(true);
    expect(b.cache.size).toBe(0);
    expect(b.cache.purge('a.test/p')).toBe(false);
    // Worker a still has it, in memory (it filled it); b, which had not served it yet, reads the file:
    // removed under it (evicted meanwhile), it is a miss, not an error, and b drops the entry.
    deliver();
    const identity = cache?.get('a.test/p') as unknown as SharedEntryData;
    const onB = b.cache.forSite(site, CONFIG);
    cache?.set('a.test/q', response(Buffer.from('q')));
    deliver();
    const entry = onB?.get('a.test/q');
    await unlink((entry as unknown as SharedEntryData).file);
    expect(onB?.body(entry as never)).toBeNull();
    expect(onB?.get('a.test/q')).toBeUndefined();
    expect(identity).toBeDefined();
  });

  it('small bodies once served stay in memory, within the budget: a hot hit reads no file', async () => {
    const [a] = workers as [Worker, Worker];
    const b = worker(2);
    workers.push(b);
    // 10 KB bodies, a 25 KB budget: two stay hot.
    const small = new SharedCache({
      dir,
      prefix: 'w3',
      siteNumber: () => 7,
      link: { stored() {}, touched() {}, released() {} },
      hotBytes: 25_000,
    });
    small.retain(new Set([site]));
    const cache = a.cache.forSite(site, CONFIG);
    for (let i = 0; i < 4; i++) cache?.set(`a.test/${i}`, response(Buffer.alloc(10_000, i)));
    const updates: CacheIndexUpdate[] = [];
    while (toPrimary.length > 0) (toPrimary.shift() as () => void)();
    for (const update of b.inbox) updates.push(update);
    for (const update of updates) small.apply(update);
    const mine = small.forSite(site, CONFIG);
    if (mine === null) throw new Error('site 7 is shared');
    for (let i = 0; i < 4; i++) {
      const entry = mine.get(`a.test/${i}`);
      expect(mine.body(entry as never)).toEqual(Buffer.alloc(10_000, i));
    }
    expect(small.hotBytes).toBe(20_000);
    // The last two served are hot: their files may go, they are still answered (until the index drops them).
    for (const i of [2, 3]) await unlink((mine.get(`a.test/${i}`) as unknown as SharedEntryData).file);
    expect(mine.body(mine.get('a.test/3') as never)).toEqual(Buffer.alloc(10_000, 3));
    // An index deletion takes the body out of memory with the entry.
    const three = mine.get('a.test/3') as unknown as SharedEntryData;
    small.apply({ set: [], deleted: [{ key: three.key, file: three.file }] });
    expect(small.hotBytes).toBe(10_000);
    small.close();
  });

  it('a site no longer served: its entries leave every copy and the index, and their files go', async () => {
    const [a, b] = workers as [Worker, Worker];
    a.cache.forSite(site, CONFIG)?.set('a.test/p', response(Buffer.from('x')));
    deliver();
    b.cache.retain(new Set());
    expect(b.cache.size).toBe(0);
    deliver();
    expect(index.size).toBe(0);
    expect(a.cache.size).toBe(0);
    await new Promise((r) => setTimeout(r, 20));
    expect(await filesIn()).toEqual([]);
    expect(existsSync(dir)).toBe(true);
  });
});
