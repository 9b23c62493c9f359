import { execFileSync, spawnSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readdir, readFile, readlink, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildProgram, type DaemonCommands } from '@proxyd/cli';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LocalCa, LocalCaKeys } from '../local-ca/local-ca.js';
import { FileStorage } from '../storage/file-storage.js';
import { type NssTrustStore, nssFlags, type SystemTrustStore, trustLocalRoot, untrustLocalRoot } from './trust.js';

// The real update-ca-certificates and certutil, every path in a temp dir:
// never the machine's /usr/local/share/ca-certificates, /etc/ssl or ~/.pki.
// The distribution's CAs are one decoy root, as on a real system where the
// bundle always holds other CAs (update-ca-certificates keeps an old bundle
// when no CA is left at all).

let dir: string;
let certDir: string;
let system: Required<Omit<SystemTrustStore, 'command'>>;
let nss: NssTrustStore & { dbDir: string };
let decoyPem: string;

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'proxyd-trust-'));
  certDir = path.join(dir, 'certs');
  system = {
    localCertsDir: path.join(dir, 'local-ca-certificates'),
    certsDir: path.join(dir, 'share-ca-certificates'),
    etcCertsDir: path.join(dir, 'etc-ssl-certs'),
    certsConf: path.join(dir, 'ca-certificates.conf'),
    hooksDir: path.join(dir, 'update.d'),
  };
  nss = { dbDir: path.join(dir, 'home', '.pki', 'nssdb') };
  decoyPem = (await LocalCa.open(new FileStorage(path.join(dir, 'decoy')))).rootPem;
  await mkdir(system.localCertsDir);
  await mkdir(system.certsDir);
  await mkdir(system.etcCertsDir);
  await writeFile(path.join(system.certsDir, 'decoy.crt'), decoyPem);
  await writeFile(system.certsConf, 'decoy.crt\n');
  execFileSync('update-ca-certificates', args(system), { stdio: 'ignore' });
});
afterEach(() => rm(dir, { recursive: true, force: true }));

function args(store: typeof system): string[] {
  return Object.entries({
    '--localcertsdir': store.localCertsDir,
    '--certsdir': store.certsDir,
    '--etccertsdir': store.etcCertsDir,
    '--certsconf': store.certsConf,
    '--hooksdir': store.hooksDir,
  }).flat();
}

const bundlePath = () => path.join(system.etcCertsDir, 'ca-certificates.crt');
const body = (pem: string) => pem.replace(/-----[^-]+-----|\s/g, '');
const listNss = () => execFileSync('certutil', ['-L', '-d', `sql:${nss.dbDir}`], { encoding: 'utf8' });

/** `openssl verify` of a fresh leaf of the local CA against the system bundle. */
async function verifyLeaf(): Promise<{ ok: boolean; output: string }> {
  const leaf = await (await LocalCa.open(new FileStorage(certDir))).issue(['app.localhost']);
  const [leafPem, intermediatePem] = leaf.certPem.split(/(?<=-----END CERTIFICATE-----)\n/);
  await writeFile(path.join(dir, 'leaf.pem'), leafPem ?? '');
  await writeFile(path.join(dir, 'intermediate.pem'), intermediatePem ?? '');
  const result = spawnSync(
    'openssl',
    ['verify', '-CAfile', bundlePath(), '-untrusted', path.join(dir, 'intermediate.pem'), path.join(dir, 'leaf.pem')],
    { encoding: 'utf8' },
  );
  return { ok: result.status === 0, output: `${result.stdout}${result.stderr}` };
}

describe('trustLocalRoot / untrustLocalRoot (real update-ca-certificates and certutil)', () => {
  it('creates the CA, installs the root in the bundle and the NSS db; a leaf verifies against the bundle', async () => {
    const report = await trustLocalRoot({ certDir, system, nss });
    expect(report.steps.map((s) => [s.store, s.status])).toEqual([
      ['local-ca', 'changed'],
      ['system', 'changed'],
      ['nss', 'changed'],
    ]);
    const root = report.root;
    if (root === null) throw new Error('no root');
    expect(body(root.pem)).toBe(body(String(await new FileStorage(certDir).load(LocalCaKeys.rootCert))));
    expect(root.fileName).toMatch(/^proxyd-local-authority-\d{4}-ecc-root-[0-9a-f]{8}\.crt$/);
    expect(root.nickname).toBe(`${root.commonName} ${root.fingerprint.slice(0, 8)}`);

    const anchor = path.join(system.localCertsDir, root.fileName);
    expect(await readFile(anchor, 'utf8')).toBe(root.pem);
    expect((await stat(anchor)).mode & 0o777).toBe(0o644);
    const bundle = (await readFile(bundlePath(), 'utf8')).replace(/\s/g, '');
    expect(bundle).toContain(body(root.pem));
    expect(bundle).toContain(body(decoyPem));
    const verified = await verifyLeaf();
    expect(verified.output).toMatch(/leaf\.pem: OK/);
    expect(verified.ok).toBe(true);

    expect(nssFlags(listNss(), root.nickname)).toBe('C,,');
    expect(report.steps[1]?.message).toBe(`installed ${anchor}; update-ca-certificates rebuilt ${bundlePath()}`);
    expect(report.steps[2]?.message).toBe(
      `added "${root.nickname}" with trust C,, to the NSS database sql:${nss.dbDir} (created)`,
    );
  });

  it('is a no-op the second time: nothing is rewritten', async () => {
    const first = await trustLocalRoot({ certDir, system, nss });
    const anchor = path.join(system.localCertsDir, first.root?.fileName ?? '');
    const before = {
      anchor: (await stat(anchor)).mtimeMs,
      bundle: (await stat(bundlePath())).mtimeMs,
      links: await readdir(system.etcCertsDir),
      nss: listNss(),
    };
    const second = await trustLocalRoot({ certDir, system, nss });
    expect(second.root?.fingerprint).toBe(first.root?.fingerprint);
    expect(second.steps.map((s) => s.status)).toEqual(['unchanged', 'unchanged', 'unchanged']);
    expect(second.steps[1]?.message).toBe(`already trusted by the system store (${anchor})`);
    expect(second.steps[2]?.message).toMatch(/^already trusted by the NSS database sql:/);
    expect({
      anchor: (await stat(anchor)).mtimeMs,
      bundle: (await stat(bundlePath())).mtimeMs,
      links: await readdir(system.etcCertsDir),
      nss: listNss(),
    }).toEqual(before);
  });

  it('untrust removes both, leaves the other CAs and no dangling link; a second untrust is a no-op', async () => {
    const trusted = await trustLocalRoot({ certDir, system, nss });
    const root = trusted.root;
    if (root === null) throw new Error('no root');
    const removed = await untrustLocalRoot({ certDir, system, nss });
    expect(removed.steps.map((s) => [s.store, s.status])).toEqual([
      ['local-ca', 'unchanged'],
      ['system', 'changed'],
      ['nss', 'changed'],
    ]);
    await expect(stat(path.join(system.localCertsDir, root.fileName))).rejects.toMatchObject({ code: 'ENOENT' });
    const bundle = (await readFile(bundlePath(), 'utf8')).replace(/\s/g, '');
    expect(bundle).not.toContain(body(root.pem));
    expect(bundle).toContain(body(decoyPem));
    for (const name of await readdir(system.etcCertsDir)) {
      const link = path.join(system.etcCertsDir, name);
      if (name !== 'ca-certificates.crt')
        await expect(stat(link), `${name} → ${await readlink(link)}`).resolves.toBeTruthy();
    }
    expect((await verifyLeaf()).ok).toBe(false);
    expect(listNss()).not.toContain(root.nickname);

    const again = await untrustLocalRoot({ certDir, system, nss });
    expect(again.steps.map((s) => s.status)).toEqual(['unchanged', 'unchanged', 'unchanged']);
    expect(again.steps[1]?.message).toMatch(/^not trusted by the system store/);
    expect(again.steps[2]?.message).toBe(`not trusted by the NSS database sql:${nss.dbDir}`);
    // The root stays in the cert dir: trusting again installs the same one.
    expect((await trustLocalRoot({ certDir, system, nss })).root?.fingerprint).toBe(root.fingerprint);
  });

  it('untrust with no local CA in the cert dir creates nothing and touches no store', async () => {
    const report = await untrustLocalRoot({ certDir, system, nss });
    expect(report.root).toBeNull();
    expect(report.steps).toEqual([
      { store: 'local-ca', status: 'unchanged', message: `no local CA root in ${certDir}: nothing to untrust` },
    ]);
    expect(await new FileStorage(certDir).list('ca')).toEqual([]);
    await expect(stat(nss.dbDir)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('untrust leaves another root of the same name family alone', async () => {
    await trustLocalRoot({ certDir, system, nss });
    const other = path.join(dir, 'other-certs');
    const otherReport = await trustLocalRoot({ certDir: other, system, nss });
    await untrustLocalRoot({ certDir, system, nss });
    const otherRoot = otherReport.root;
    if (otherRoot === null) throw new Error('no root');
    expect(await readdir(system.localCertsDir)).toEqual([otherRoot.fileName]);
    expect((await readFile(bundlePath(), 'utf8')).replace(/\s/g, '')).toContain(body(otherRoot.pem));
    expect(nssFlags(listNss(), otherRoot.nickname)).toBe('C,,');
  });

  it('a cert dir with a file open to others is a clear error, and no store changes', async () => {
    await LocalCa.open(new FileStorage(certDir));
    const rootFile = path.join(certDir, LocalCaKeys.rootCert);
    await chmod(rootFile, 0o644);
    const bundle = await readFile(bundlePath(), 'utf8');
    await expect(trustLocalRoot({ certDir, system, nss })).rejects.toMatchObject({
      code: 'CERT_STORAGE_UNSAFE_MODE',
      message: expect.stringContaining(`chmod 600 ${rootFile}`),
    });
    await expect(untrustLocalRoot({ certDir, system, nss })).rejects.toMatchObject({
      code: 'CERT_STORAGE_UNSAFE_MODE',
    });
    expect(await readdir(system.localCertsDir)).toEqual([]);
    expect(await readFile(bundlePath(), 'utf8')).toBe(bundle);
    await expect(stat(nss.dbDir)).rejects.toMatchObject({ code: 'ENOENT' });
    expect((await stat(rootFile)).mode & 0o777).toBe(0o644);
  });

  it('a missing certutil names libnss3-tools and the system store is still done', async () => {
    const report = await trustLocalRoot({ certDir, system, nss: { ...nss, command: path.join(dir, 'no-certutil') } });
    expect(report.steps.map((s) => s.status)).toEqual(['changed', 'changed', 'failed']);
    expect(report.steps[2]?.message).toBe(
      'NSS database: certutil not found: install the Debian package libnss3-tools (apt-get install libnss3-tools), then run this again',
    );
  });

  it('a missing update-ca-certificates names ca-certificates and the NSS db is still done', async () => {
    const report = await trustLocalRoot({
      certDir,
      system: { ...system, command: path.join(dir, 'no-update-ca-certificates') },
      nss,
    });
    expect(report.steps.map((s) => s.status)).toEqual(['changed', 'failed', 'changed']);
    expect(report.steps[1]?.message).toMatch(
      /update-ca-certificates not found: install the Debian package ca-certificates/,
    );
    expect(await readdir(system.localCertsDir)).toEqual([]);
  });

  it('leaves a store out when told to', async () => {
    const report = await trustLocalRoot({ certDir, system: false, nss });
    expect(report.steps.map((s) => s.store)).toEqual(['local-ca', 'nss']);
    expect(await readdir(system.localCertsDir)).toEqual([]);
  });
});

// The command's options as the CLI hands them over (@proxyd/cli's public entry exports DaemonCommands).
type TrustCommandOptions = Parameters<DaemonCommands['trust']>[0];

describe('proxyd trust / untrust commands', () => {
  const calls: Array<[string, TrustCommandOptions]> = [];
  const daemon = {
    run: async () => {},
    demo: async () => {},
    trust: async (options: TrustCommandOptions) => {
      calls.push(['trust', options]);
      return {
        steps: [
          { status: 'changed' as const, message: 'did it' },
          { status: 'failed' as const, message: 'system store: needs root' },
        ],
      };
    },
    untrust: async (options: TrustCommandOptions) => {
      calls.push(['untrust', options]);
      return { steps: [{ status: 'unchanged' as const, message: 'nothing to do' }] };
    },
  };
  let out = '';
  let err = '';
  beforeEach(() => {
    calls.length = 0;
    out = '';
    err = '';
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      out += String(chunk);
      return true;
    });
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      err += String(chunk);
      return true;
    });
  });
  afterEach(() => {
    vi.restoreAllMocks();
    vi.unstubAllEnvs();
    process.exitCode = undefined;
  });

  it('passes --cert-dir and the store switches; prints each step; a failed step exits 1', async () => {
    await buildProgram('0.0.0', daemon).parseAsync(['trust', '--cert-dir', '/tmp/x', '--no-system'], { from: 'user' });
    expect(calls).toEqual([['trust', { certDir: '/tmp/x', system: false, nss: true }]]);
    expect(out).toBe('did it\n');
    expect(err).toBe('proxyd: system store: needs root\n');
    expect(process.exitCode).toBe(1);
  });

  it('reads PROXY_CERT_DIR; untrust with nothing failed exits 0', async () => {
    vi.stubEnv('PROXY_CERT_DIR', '/tmp/from-env');
    await buildProgram('0.0.0', daemon).parseAsync(['untrust', '--no-nss'], { from: 'user' });
    expect(calls).toEqual([['untrust', { certDir: '/tmp/from-env', system: true, nss: false }]]);
    expect(out).toBe('nothing to do\n');
    expect(process.exitCode).toBeUndefined();
  });

  it('lists both in --help', () => {
    const help = buildProgram('0.0.0', daemon).helpInformation();
    expect(help).toMatch(/\n\s+trust \[options\]\s+install the local CA's root/);
    expect(help).toMatch(/\n\s+untrust \[options\]\s+remove the local CA's root/);
  });
});
