import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { proxydCommand } from './support/proxyd.js';

const run = promisify(execFile);
const CORPUS = fileURLToPath(new URL('../packages/proxyfile/test/caddy-corpus/', import.meta.url));
const README = fileURLToPath(new URL('../packages/proxyfile/README.md', import.meta.url));
const files = (dir: string) => readdirSync(join(CORPUS, dir)).filter((f) => f.endsWith('.Caddyfile'));

/** `proxyd validate --config <file>` with the built daemon: its exit code and output. */
async function validate(path: string): Promise<{ code: number; out: string }> {
  const command = proxydCommand(['validate', '--config', path]);
  try {
    const { stdout, stderr } = await run(command.file, command.args);
    return { code: 0, out: stdout + stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, out: e.stdout + e.stderr };
  }
}

// Issue 34: Caddyfiles in the forms Caddy's documentation shows for the
// directives of the issue (written for this corpus), checked with the built
// `proxyd validate`. What does not validate is in `unsupported/`, each file
// listed in the proxyfile README with why.
describe('the Caddyfile corpus (built proxyd validate)', () => {
  for (const name of files('supported')) {
    it(`validates supported/${name}`, async () => {
      const { code, out } = await validate(join(CORPUS, 'supported', name));
      expect(out).toMatch(/^Valid configuration: \d+ sites?, \d+ upstreams?/);
      expect(code).toBe(0);
    });
  }

  it('refuses each unsupported form with a positioned error, and the README says why', async () => {
    const readme = readFileSync(README, 'utf8');
    const section = readme.slice(readme.indexOf('### The Caddyfile corpus'));
    const unsupported = files('unsupported');
    expect(unsupported.length).toBeGreaterThan(0);
    for (const name of unsupported) {
      const { code, out } = await validate(join(CORPUS, 'unsupported', name));
      expect(code, `${name} validated: ${out}`).toBe(1);
      expect(out).toContain(`${name}:`);
      expect(section, `${name} is not listed in the README's corpus section`).toContain(`\`${name}\``);
    }
  });
});
