import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { format, isFormatted, parse } from './index.js';

const fixture = (name: string) =>
  readFileSync(new URL(`../test/fixtures/${name}`, import.meta.url), 'utf8').split('\n----------\n')[0] as string;

describe('format keeps the Caddy forms of issue 21', () => {
  for (const name of [
    'caddy-debian-default.txt',
    'site-without-braces.txt',
    'catch-all.txt',
    'named-matchers.txt',
    'placeholders.txt',
  ]) {
    it(`${name}: format is idempotent and parses to the same model`, () => {
      const text = `${fixture(name)}\n`;
      const once = format(text);
      expect(isFormatted(once)).toBe(true);
      expect(parse(once, { env: {} })).toEqual(parse(text, { env: {} }));
    });
  }

  it('a site without braces stays at the top level (no indentation is invented)', () => {
    expect(format('example.com\n  reverse_proxy 127.0.0.1:3000\n')).toBe('example.com\nreverse_proxy 127.0.0.1:3000\n');
  });
});
