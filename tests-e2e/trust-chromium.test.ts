import { execFile } from 'node:child_process';
import { chown, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROXYD_MAIN, type RunningProxyd, startProxyd } from './support/proxyd.js';

// `proxyd trust` / `proxyd untrust` as a user runs them, then headless
// Chromium (the system's, never a downloaded one) reading the NSS database
// of a temporary HOME. Scope: these runs pass --no-system, so they exercise
// the NSS half only — the CLI does not expose the system store's paths and
// the machine's /usr/local/share/ca-certificates and /etc/ssl must not be
// touched; packages/certificates/src/trust/trust.test.ts runs the system half with the real
// update-ca-certificates on temp dirs. The last test runs the real default
// system store as an unprivileged user, where it can only be refused.

const exec = promisify(execFile);
const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  // .localhost resolves to loopback in Chromium anyway; the rule makes it explicit.
  '--host-resolver-rules=MAP app.localhost 127.0.0.1',
];

/** Runs the built `proxyd` with `args` and the environment `env` on top of this one; never rejects. */
async function proxydCli(
  args: string[],
  env: NodeJS.ProcessEnv,
  options: { uid?: number; gid?: number } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(process.execPath, [PROXYD_MAIN, ...args], {
      env: { ...process.env, ...env },
      ...options,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** Loads `url` in a fresh Chromium profile whose HOME is `home`: the page text, or the navigation error. */
async function load(url: string, home: string): Promise<{ text: string } | { error: string }> {
  const profile = await mkdtemp(path.join(tmpdir(), 'proxyd-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: FLAGS,
    env: { ...process.env, HOME: home },
  });
  try {
    const page = context.pages()[0] ?? (await context.newPage());
    try {
      await page.goto(url);
      return { text: (await page.textContent('body')) ?? '' };
    } catch (err) {
      return { error: (err as Error).message };
    }
  } finally {
    await context.close();
    await rm(profile, { recursive: true, force: true });
  }
}

describe('proxyd trust / untrust with Chromium (NSS of a temp HOME)', () => {
  let dir: string;
  let home: string;
  let certDir: string;
  let proxyd: RunningProxyd | undefined;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'proxyd-e2e-trust-'));
    home = path.join(dir, 'home');
    certDir = path.join(dir, 'certs');
    await mkdir(home);
  });
  afterAll(async () => {
    await proxyd?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('`--help` lists trust and untrust', async () => {
    const { stdout } = await proxydCli(['--help'], {});
    expect(stdout).toMatch(/^\s+trust \[options\]/m);
    expect(stdout).toMatch(/^\s+untrust \[options\]/m);
  });

  it('trust creates the CA and trusts its root in $HOME/.pki/nssdb; the second run changes nothing', async () => {
    const nssdb = path.join(home, '.pki', 'nssdb');
    const first = await proxydCli(['trust', '--cert-dir', certDir, '--no-system'], { HOME: home });
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    const lines = first.stdout.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(
      new RegExp(
        `^created the local CA root "proxyd Local Authority - \\d{4} ECC Root" \\(SHA-256 [0-9a-f]{64}\\) in ${certDir}$`,
      ),
    );
    expect(lines[1]).toMatch(
      new RegExp(
        `^added "proxyd Local Authority - \\d{4} ECC Root [0-9a-f]{8}" with trust C,, to the NSS database sql:${nssdb} \\(created\\)$`,
      ),
    );
    const second = await proxydCli(['trust', '--no-system'], { HOME: home, PROXY_CERT_DIR: certDir });
    expect(second.code).toBe(0);
    expect(second.stdout).toMatch(/^local CA root "proxyd Local Authority/);
    expect(second.stdout).toMatch(/\nalready trusted by the NSS database sql:/);
  });

  it('Chromium with that HOME loads https://app.localhost from proxyd without a certificate error; after untrust it refuses', async () => {
    proxyd = await startProxyd({ sites: 'app.localhost {\n\trespond "trusted"\n}\n', args: ['--cert-dir', certDir] });
    const proxyfile = await readFile(proxyd.configPath, 'utf8');
    const httpsPort = Number(/https_port (\d+)/.exec(proxyfile)?.[1]);
    const url = `https://app.localhost:${httpsPort}/`;

    expect(await load(url, home)).toEqual({ text: 'trusted' });

    const untrust = await proxydCli(['untrust', '--cert-dir', certDir, '--no-system'], { HOME: home });
    expect(untrust.code).toBe(0);
    expect(untrust.stdout).toMatch(
      /\nremoved "proxyd Local Authority - \d{4} ECC Root [0-9a-f]{8}" from the NSS database/,
    );
    const again = await proxydCli(['untrust', '--cert-dir', certDir, '--no-system'], { HOME: home });
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/\nnot trusted by the NSS database sql:/);

    const refused = await load(url, home);
    expect(refused).toMatchObject({ error: expect.stringContaining('net::ERR_CERT_AUTHORITY_INVALID') });
  });
});

// As root the real system store would be changed, so this runs as nobody,
// for whom /usr/local/share/ca-certificates is not writable.
describe.skipIf(process.getuid?.() !== 0)('proxyd trust as an unprivileged user', () => {
  const NOBODY = 65534;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'proxyd-e2e-trust-user-'));
    await mkdir(path.join(dir, 'home'));
    for (const p of [dir, path.join(dir, 'home')]) await chown(p, NOBODY, NOBODY);
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('says the system store needs root and what to run, still trusts the NSS db, and exits 1', async () => {
    const home = path.join(dir, 'home');
    const certDir = path.join(dir, 'certs');
    const result = await proxydCli(['trust', '--cert-dir', certDir], { HOME: home }, { uid: NOBODY, gid: NOBODY });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^proxyd: system store: writing \/usr\/local\/share\/ca-certificates needs root \(EACCES\); run proxyd trust as root, or: sudo install -m 644 \S+\/ca\/local\/root\.crt \/usr\/local\/share\/ca-certificates\/proxyd-local-authority-\d{4}-ecc-root-[0-9a-f]{8}\.crt && sudo update-ca-certificates\n$/,
    );
    expect(result.stdout).toMatch(
      /\nadded "proxyd Local Authority - \d{4} ECC Root [0-9a-f]{8}" with trust C,, to the NSS database/,
    );
  });
});
