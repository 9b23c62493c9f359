import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type ProxyfileWatch, proxyfileInputs, watchProxyfile } from './watch.js';

const site = (name: string) => `${name}.test {\n\trespond "${name}"\n}\n`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out');
    await sleep(10);
  }
}

describe('run --watch', () => {
  let dir: string;
  let file: string;
  let watch: ProxyfileWatch | undefined;
  /** What the Proxyfile held at each reload, and when the reload ran. */
  let reloads: Array<{ text: string; at: number }>;

  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'proxyd-watch-'));
    file = path.join(dir, 'Proxyfile');
    writeFileSync(file, site('one'));
    reloads = [];
  });
  afterEach(() => {
    watch?.close();
    watch = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  function start(debounceMs: number, cooldownMs: number): void {
    watch = watchProxyfile({
      configPath: file,
      reload: async () => {
        reloads.push({ text: readFileSync(file, 'utf8'), at: Date.now() });
        return { ok: true, message: 'reloaded' };
      },
      logger: pino({ level: 'silent' }),
      debounceMs,
      cooldownMs,
    });
  }

  it('debounces a burst of saves into one reload of the last text', async () => {
    start(150, 0);
    for (const name of ['two', 'three', 'four']) {
      writeFileSync(file, site(name));
      await sleep(20);
    }
    await until(() => reloads.length === 1);
    await sleep(400);
    expect(reloads.map((r) => r.text)).toEqual([site('four')]);
  });

  it('queues a change inside the cooldown and reloads it when the cooldown ends: never dropped', async () => {
    start(30, 800);
    writeFileSync(file, site('two'));
    await until(() => reloads.length === 1);
    writeFileSync(file, site('three'));
    await sleep(100);
    writeFileSync(file, site('four'));
    await until(() => reloads.length === 2);
    expect(reloads.map((r) => r.text)).toEqual([site('two'), site('four')]);
    expect((reloads[1]?.at ?? 0) - (reloads[0]?.at ?? 0)).toBeGreaterThanOrEqual(790);
    await watch?.idle();
    expect(reloads).toHaveLength(2);
  });

  it('a save that changes nothing reloads nothing', async () => {
    start(30, 0);
    writeFileSync(file, site('one'));
    await sleep(300);
    await watch?.idle();
    expect(reloads).toEqual([]);
  });

  it('sees an editor that saves by writing a new file and renaming it over the old one', async () => {
    start(30, 0);
    writeFileSync(path.join(dir, '.Proxyfile.swp'), site('renamed'));
    renameSync(path.join(dir, '.Proxyfile.swp'), file);
    await until(() => reloads.length === 1);
    expect(reloads[0]?.text).toBe(site('renamed'));
  });

  it('watches imported files, and follows the imports after a reload', async () => {
    mkdirSync(path.join(dir, 'sites'));
    writeFileSync(path.join(dir, 'sites', 'a.conf'), site('a'));
    writeFileSync(path.join(dir, 'b.conf'), site('b'));
    writeFileSync(file, 'import sites/a.conf\n');
    start(30, 0);
    writeFileSync(path.join(dir, 'sites', 'a.conf'), site('a2'));
    await until(() => reloads.length === 1);
    // Not imported yet: no reload.
    writeFileSync(path.join(dir, 'b.conf'), site('b2'));
    await sleep(200);
    expect(reloads).toHaveLength(1);
    writeFileSync(file, 'import sites/a.conf\nimport b.conf\n');
    await until(() => reloads.length === 2);
    writeFileSync(path.join(dir, 'b.conf'), site('b3'));
    await until(() => reloads.length === 3);
  });

  it('a glob import reloads when a file appears in its directory', async () => {
    mkdirSync(path.join(dir, 'sites'));
    writeFileSync(path.join(dir, 'sites', 'a.conf'), site('a'));
    writeFileSync(file, 'import sites/*.conf\n');
    expect(proxyfileInputs(file)).toEqual({
      files: [file, path.join(dir, 'sites', 'a.conf')],
      dirs: [path.join(dir, 'sites')],
    });
    start(30, 0);
    writeFileSync(path.join(dir, 'sites', 'new.conf'), site('new'));
    await until(() => reloads.length === 1);
  });

  it('a Proxyfile that does not parse is still watched, and the reload reports it', async () => {
    writeFileSync(file, 'broken {\n');
    expect(proxyfileInputs(file)).toEqual({ files: [file], dirs: [] });
    start(30, 0);
    writeFileSync(file, site('fixed'));
    await until(() => reloads.length === 1);
    expect(reloads[0]?.text).toBe(site('fixed'));
  });
});
