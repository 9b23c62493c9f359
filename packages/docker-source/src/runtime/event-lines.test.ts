import { describe, expect, it } from 'vitest';
import { LineSplitter } from './event-lines.js';

const b = (text: string) => Buffer.from(text, 'utf8');

describe('LineSplitter', () => {
  it('joins an object split across chunks, and splits several objects in one chunk', () => {
    const s = new LineSplitter();
    expect(s.push(b('{"a":'))).toEqual({ lines: [], dropped: [] });
    expect(s.pending).toBe(5);
    expect(s.push(b('1}\n{"b":2}\n{"c"'))).toEqual({ lines: ['{"a":1}', '{"b":2}'], dropped: [] });
    expect(s.push(b(':3}\n'))).toEqual({ lines: ['{"c":3}'], dropped: [] });
    expect(s.pending).toBe(0);
  });

  it('skips empty lines and CRLF ends', () => {
    const s = new LineSplitter();
    expect(s.push(b('\n\r\n{"a":1}\r\n\n')).lines).toEqual(['{"a":1}']);
  });

  it('keeps a multi-byte character split between chunks whole', () => {
    const s = new LineSplitter();
    const bytes = b('{"name":"café"}\n');
    const cut = bytes.indexOf(0xc3) + 1;
    expect(s.push(bytes.subarray(0, cut)).lines).toEqual([]);
    expect(s.push(bytes.subarray(cut)).lines).toEqual(['{"name":"café"}']);
  });

  it('drops a line longer than the cap, across chunks, and goes on with the next one', () => {
    const s = new LineSplitter(16);
    expect(s.push(b('{"x":"0123456789'))).toEqual({ lines: [], dropped: [] });
    // Past the cap: the buffer is released at once, the rest of the line is skipped.
    expect(s.push(b('abcdef')).lines).toEqual([]);
    expect(s.pending).toBe(0);
    expect(s.push(b('ghij"}\n{"ok":1}\n'))).toEqual({ lines: ['{"ok":1}'], dropped: [28] });
  });

  it('a line of exactly the cap is kept; one byte more is dropped', () => {
    const s = new LineSplitter(8);
    expect(s.push(b('12345678\n123456789\nok\n'))).toEqual({ lines: ['12345678', 'ok'], dropped: [9] });
  });

  it('holds at most the cap in memory whatever the stream sends', () => {
    const s = new LineSplitter(1024);
    for (let i = 0; i < 100; i++) s.push(Buffer.alloc(1000, 0x61));
    expect(s.pending).toBeLessThanOrEqual(1024);
    expect(s.push(b('\n{"after":true}\n'))).toEqual({ lines: ['{"after":true}'], dropped: [100_000] });
  });
});
