import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Config } from '@proxyd/proxy-core/model';
import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { ProxyfileError, parse } from './index.js';

// Golden files (Caddy's style): the Proxyfile, a line of ten dashes, then
// either the expected model as JSON or the expected error (its code on one
// line, its message on the next). UPDATE_GOLDEN=1 rewrites the expectations.
const fixtures = fileURLToPath(new URL('../test/fixtures/', import.meta.url));
const files = join(fixtures, 'files');
const SEPARATOR = '\n----------\n';
const env = { SITE_DOMAIN: 'env.test', UPSTREAM_PORT: '9100', EMPTY: '' };

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

describe('golden files', () => {
  const names = readdirSync(fixtures).filter((f) => f.endsWith('.txt'));
  it('there is a golden file per directive and per error kind', () => {
    expect(names.length).toBeGreaterThanOrEqual(30);
  });
  for (const name of names) {
    it(name, () => {
      const path = join(fixtures, name);
      const text = readFileSync(path, 'utf8');
      const at = text.indexOf(SEPARATOR);
      expect(at, 'no ---------- line').toBeGreaterThan(-1);
      const input = text.slice(0, at + 1);
      const expected = text.slice(at + SEPARATOR.length);
      const actual = run(input);
      if (process.env.UPDATE_GOLDEN === '1') writeFileSync(path, `${input}----------\n${actual}`);
      else expect(actual).toBe(expected);
    });
  }
});
