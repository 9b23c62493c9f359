import { describe, expect, it } from 'vitest';
import { CowList } from './cow-list.js';

/** A deterministic pseudo-random sequence (the same every run). */
function seeded(seed: number): () => number {
  let x = seed;
  return () => {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    return x / 0x7fffffff;
  };
}

describe('CowList', () => {
  it('holds what an array holds, through pushes, sets and pops across chunk boundaries', () => {
    const list = new CowList<number>();
    const array: number[] = [];
    const random = seeded(7);
    for (let step = 0; step < 20_000; step++) {
      const r = random();
      if (r < 0.55 || array.length === 0) {
        list.push(step);
        array.push(step);
      } else if (r < 0.8) {
        const at = Math.floor(random() * array.length);
        list.set(at, -step);
        array[at] = -step;
      } else {
        expect(list.pop()).toBe(array.pop());
      }
      expect(list.length).toBe(array.length);
    }
    expect(list.freeze().toArray()).toEqual(array);
    for (let i = 0; i < array.length; i += 97) expect(list.get(i)).toBe(array[i]);
    expect(list.get(array.length)).toBeUndefined();
    expect(() => list.set(array.length, 1)).toThrow(RangeError);
  });

  it('keeps every frozen state as it was when frozen, whatever changes after', () => {
    const list = new CowList<number>();
    const array: number[] = [];
    const states: { frozen: ReturnType<CowList<number>['freeze']>; copy: number[] }[] = [];
    const random = seeded(11);
    for (let i = 0; i < 3_000; i++) {
      list.push(i);
      array.push(i);
    }
    for (let round = 0; round < 200; round++) {
      states.push({ frozen: list.freeze(), copy: [...array] });
      // A write of a table: a few sets, a swap-remove, an append.
      for (let k = 0; k < 3; k++) {
        const at = Math.floor(random() * array.length);
        list.set(at, 100_000 + round);
        array[at] = 100_000 + round;
      }
      const at = Math.floor(random() * array.length);
      const last = list.pop() as number;
      array.pop();
      if (at < array.length) {
        list.set(at, last);
        array[at] = last;
      }
      list.push(200_000 + round);
      array.push(200_000 + round);
    }
    for (const { frozen, copy } of states) {
      expect(frozen.length).toBe(copy.length);
      expect(frozen.toArray()).toEqual(copy);
    }
    expect(list.freeze().toArray()).toEqual(array);
  });

  it('empties with clear, leaving frozen states whole', () => {
    const list = new CowList<string>();
    for (let i = 0; i < 2_500; i++) list.push(`r${i}`);
    const before = list.freeze();
    list.clear();
    expect(list.length).toBe(0);
    expect(list.freeze().toArray()).toEqual([]);
    list.push('again');
    expect(list.freeze().toArray()).toEqual(['again']);
    expect(before.length).toBe(2_500);
    expect(before.toArray()[2_499]).toBe('r2499');
  });
});
