import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Config } from '@proxyd/model';
import { Value } from 'typebox/value';
import { describe, expect, it } from 'vitest';
import { DIRECTIVES, ProxyfileError, ProxyfileErrorCode, parse } from './index.js';

// Golden files (Caddy's style): the Proxyfile, a line of ten dashes, then
// either the expected model as JSON or the expected error (its code on one
// line, its message on the next). UPDATE_GOLDEN=1 rewrites the expectations.
const fixtures = fileURLToPath(new URL('../test/fixtures/', import.meta.url));
const files = join(fixtures, 'files');
const SEPARATOR = '\n----------\n';
const env = { SITE_DOMAIN: 'env.test', UPSTREAM_PORT: '9100', EMPTY: '', BRACE: '{' };

function run(input: string): string {
  try {
    const config = parse(input, {
      filename: 'Proxyfile',
      readFile: (p) => readFileSync(join(files, p), 'utf8'),
      readDir: (p) => readdirSync(join(files, p)),
      env,
    });
    expect(Value.Check(Config, config), [...Value.Errors(Config, config)].map((e) => e.message).join()).toBe(true);
    return `${JSON.stringify(config, null, 2)}\n`;
  } catch (err) {
    if (!(err instanceof ProxyfileError)) throw err;
    return `${err.code}\n${err.message}\n`;
  }
}

function split(text: string): { input: string; expected: string } {
  const at = text.indexOf(SEPARATOR);
  expect(at, 'no ---------- line').toBeGreaterThan(-1);
  return { input: text.slice(0, at + 1), expected: text.slice(at + SEPARATOR.length) };
}

describe('golden files', () => {
  const names = readdirSync(fixtures).filter((f) => f.endsWith('.txt'));
  const golden = names.map((name) => split(readFileSync(join(fixtures, name), 'utf8')));

  it('every directive is used in a golden file that compiles', () => {
    const inputs = golden.filter((g) => g.expected.startsWith('{')).map((g) => g.input);
    for (const { name } of DIRECTIVES) {
      const used = new RegExp(`^\\s*"?${name}"?(?:\\s|$)`, 'm');
      expect(
        inputs.some((input) => used.test(input)),
        `no compiling golden file uses ${name}`,
      ).toBe(true);
    }
  });

  it('every error code of the registry is the expectation of a golden file', () => {
    const codes = new Set(golden.map((g) => g.expected.split('\n', 1)[0]));
    for (const code of Object.values(ProxyfileErrorCode))
      expect(codes.has(code), `no golden file expects ${code}`).toBe(true);
  });

  for (const name of names) {
    it(name, () => {
      const path = join(fixtures, name);
      const { input, expected } = split(readFileSync(path, 'utf8'));
      const actual = run(input);
      if (process.env.UPDATE_GOLDEN === '1') writeFileSync(path, `${input}----------\n${actual}`);
      else expect(actual).toBe(expected);
    });
  }
});
