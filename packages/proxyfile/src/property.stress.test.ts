import { readFileSync } from 'node:fs';
import { Config } from '@proxyd/model';
import fc from 'fast-check';
import { Value } from 'typebox/value';
import { describe, expect, it } from 'vitest';
import { format, ProxyfileError, parse } from './index.js';
import { type Generated, generated, optionsFor } from './property.test-helpers.js';

// Long fuzz runs (the `stress` Vitest project): random and mutated text only
// ever throws ProxyfileError, quickly.

/** The mutation tests' files: the generated ones, plus what the noise imports. */
const withNoiseFiles = (g: Generated): Generated => ({
  ...g,
  files: { ...g.files, 'snippet.conf': 'header X-Imported yes\n', 'other.txt': 'respond\n' },
});

const NOISE = [
  '{',
  '}',
  '"',
  '`',
  '#',
  '\n',
  ' ',
  '\t',
  '\\',
  'import snippet.conf\n',
  'import *.conf\n',
  '{$A}',
  '{$B:x}',
  '*',
  ':',
  ',',
  '(s) {\n',
  'import s\n',
  'é',
  '\u0000',
  '/',
  'reverse_proxy',
  'handle',
  '0',
  '""',
  '``',
  ' "" ',
];
const mutation = fc.tuple(
  fc.nat(),
  fc.nat(12),
  fc.constantFrom(...NOISE),
  fc.constantFrom('insert', 'delete', 'replace', 'duplicate'),
);

function mutate(text: string, muts: [number, number, string, string][]): string {
  let s = text;
  for (const [at, len, noise, kind] of muts) {
    const i = s.length === 0 ? 0 : at % s.length;
    if (kind === 'insert') s = s.slice(0, i) + noise + s.slice(i);
    else if (kind === 'delete') s = s.slice(0, i) + s.slice(i + len);
    else if (kind === 'replace') s = s.slice(0, i) + noise + s.slice(i + 1);
    else s = s.slice(0, i + len) + s.slice(i, i + len) + s.slice(i + len);
  }
  return s;
}

function onlyProxyfileErrors(text: string, options = optionsFor(withNoiseFiles({ text, files: {}, env: {} }))): void {
  const started = performance.now();
  let formatted: string | null = null;
  try {
    formatted = format(text);
  } catch (err) {
    if (!(err instanceof ProxyfileError)) throw err;
  }
  if (formatted !== null) expect(format(formatted)).toBe(formatted);
  try {
    const config = parse(text, options);
    expect(Value.Check(Config, config)).toBe(true);
    if (formatted !== null) expect(parse(formatted, options)).toEqual(config);
  } catch (err) {
    if (!(err instanceof ProxyfileError)) throw err;
    expect(err.message).toMatch(/^Proxyfile:\d+:\d+: |^[^:]+:\d+:\d+: /);
  }
  expect(performance.now() - started).toBeLessThan(1000);
}

describe('property: random and mutated input only ever throws ProxyfileError, never hangs', () => {
  it('6,000 mutated valid files', () => {
    fc.assert(
      fc.property(generated, fc.array(mutation, { minLength: 1, maxLength: 6 }), (g, muts) => {
        onlyProxyfileErrors(mutate(g.text, muts), optionsFor(withNoiseFiles(g)));
      }),
      { numRuns: 6000 },
    );
  });

  it('2,500 random strings of Proxyfile characters', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...NOISE, 'a', 'b.c', '1', '/s', 'x.test'), { maxLength: 60 }), (parts) => {
        onlyProxyfileErrors(parts.join(''));
      }),
      { numRuns: 2500 },
    );
  });

  it('2,000 arbitrary unicode strings', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 200 }), (text) => onlyProxyfileErrors(text)),
      { numRuns: 2000 },
    );
  });
});

// Issue 21's forms: catch-alls, a site without braces, named matchers, request placeholders.
const FORMS = ['caddy-debian-default', 'catch-all', 'named-matchers', 'placeholders', 'site-without-braces'].map(
  (name) =>
    readFileSync(new URL(`../test/fixtures/${name}.txt`, import.meta.url), 'utf8').split('\n----------\n')[0] as string,
);
const FORM_NOISE = [
  '@',
  '@api',
  '@x ',
  '{host}',
  '{hots}',
  '{"a":1}',
  ':80',
  'http://',
  'path',
  'header',
  'method',
  '!',
  '*',
  '{',
  '}',
  '\n',
  ' ',
];

describe('property: mutated Caddy forms (issue 21) only ever throw ProxyfileError', () => {
  it('3,000 mutated files with matchers, placeholders, catch-alls and braceless sites', () => {
    const formMutation = fc.tuple(
      fc.nat(),
      fc.nat(12),
      fc.constantFrom(...FORM_NOISE),
      fc.constantFrom('insert', 'delete', 'replace', 'duplicate'),
    );
    fc.assert(
      fc.property(fc.constantFrom(...FORMS), fc.array(formMutation, { minLength: 1, maxLength: 5 }), (text, muts) => {
        onlyProxyfileErrors(mutate(text, muts), optionsFor({ files: {}, env: {} }));
      }),
      { numRuns: 3000 },
    );
  });
});
