import { spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { constants } from 'node:fs';
import { access, mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import { LocalCa, LocalCaKeys } from '../local-ca/local-ca.js';
import { DEFAULT_CERT_DIR, FileStorage } from '../storage/file-storage.js';
import type { CertificateStorage } from '../storage/storage.js';

/**
 * `proxyd trust` and `proxyd untrust`: the local CA's root in the stores
 * that decide trust on a Debian machine — the system store (an anchor in
 * `/usr/local/share/ca-certificates`, compiled by `update-ca-certificates`
 * into `/etc/ssl/certs/ca-certificates.crt`) and the NSS database Chromium
 * and Firefox-on-NSS read (`$HOME/.pki/nssdb`, through `certutil`). The
 * root is named by its subject and a short SHA-256 fingerprint, so untrust
 * removes exactly the entries trust added and nothing of another root.
 */

/** Debian's system store; every path is an `update-ca-certificates` option (defaults are Debian's). */
export interface SystemTrustStore {
  /** Where the anchor file is written (`--localcertsdir`), default `/usr/local/share/ca-certificates`. */
  localCertsDir?: string;
  /** The distribution's CA files (`--certsdir`), default `/usr/share/ca-certificates`. */
  certsDir?: string;
  /** Where the bundle `ca-certificates.crt` and hash links are written (`--etccertsdir`), default `/etc/ssl/certs`. */
  etcCertsDir?: string;
  /** Which distribution CAs are enabled (`--certsconf`), default `/etc/ca-certificates.conf`. */
  certsConf?: string;
  /** Hooks run after an update (`--hooksdir`), default `/etc/ca-certificates/update.d`. */
  hooksDir?: string;
  /** The program, default `update-ca-certificates` (searched on PATH, then /usr/sbin and /sbin). */
  command?: string;
}

/** The NSS database Chromium reads. */
export interface NssTrustStore {
  /** The database directory (opened as `sql:<dir>`), default `$HOME/.pki/nssdb`; created when missing. */
  dbDir?: string;
  /** The program, default `certutil` (Debian package libnss3-tools). */
  command?: string;
}

/** Options of {@link trustLocalRoot} and {@link untrustLocalRoot}. */
export interface TrustOptions {
  /** The cert dir holding the local CA, default `/etc/proxy/certs`. */
  certDir?: string;
  /**
   * Where the local CA lives when not in a cert dir: the storage a fleet
   * shares (`storage redis`), and how the report names it. Wins over
   * `certDir`.
   */
  storage?: { storage: CertificateStorage; name: string } | undefined;
  /** The system store (default: Debian's real locations), or false to leave it alone. */
  system?: SystemTrustStore | false;
  /** The NSS database (default `$HOME/.pki/nssdb`), or false to leave it alone. */
  nss?: NssTrustStore | false;
}

/** What happened in one place: `changed`, `unchanged` (already as wanted) or `failed` (the message says why and what to do). */
export type TrustStepStatus = 'changed' | 'unchanged' | 'failed';

/** One line of the report: a store and what happened there. */
export interface TrustStep {
  store: 'local-ca' | 'system' | 'nss';
  status: TrustStepStatus;
  message: string;
}

/** The local root as the trust stores name it. */
export interface LocalRoot {
  /** The root's subject common name, e.g. `proxyd Local Authority - 2025 ECC Root`. */
  commonName: string;
  /** SHA-256 of the DER certificate, lowercase hex, no separators. */
  fingerprint: string;
  /** The anchor file name in the system store: the common name as a slug and 8 hex digits of the fingerprint, `.crt`. */
  fileName: string;
  /** The NSS nickname: the common name and 8 hex digits of the fingerprint. */
  nickname: string;
  /** The certificate, PEM. */
  pem: string;
  /** The certificate, DER. */
  der: Buffer;
}

/** The outcome of trust or untrust: the root (null when untrust found none) and one step per place. */
export interface TrustReport {
  root: LocalRoot | null;
  steps: TrustStep[];
}

/** The NSS trust flags given to the root: a CA trusted to issue TLS server certificates. */
export const NSS_TRUST_FLAGS = 'C,,';

const SYSTEM_DEFAULTS = {
  localCertsDir: '/usr/local/share/ca-certificates',
  etcCertsDir: '/etc/ssl/certs',
} as const;
const BUNDLE = 'ca-certificates.crt';

/**
 * Installs the local CA's root (created in the cert dir when there is none
 * yet) into the system store and the NSS database. Idempotent: a store that
 * already trusts this root is left as it is (`unchanged`). A store that
 * cannot be changed (not root, a missing program) is a `failed` step whose
 * message says what to run; the other store is still done. A cert dir that
 * cannot be read (e.g. a file open to others) rejects before any store is
 * touched.
 */
export async function trustLocalRoot(options: TrustOptions = {}): Promise<TrustReport> {
  const { storage, where } = caStorage(options);
  const existed = (await storage.load(LocalCaKeys.rootCert)) !== null;
  const ca = await LocalCa.open(storage);
  const root = describeRoot(ca.rootPem);
  const steps: TrustStep[] = [
    {
      store: 'local-ca',
      status: existed ? 'unchanged' : 'changed',
      message: `${existed ? 'local CA root' : 'created the local CA root'} "${root.commonName}" (SHA-256 ${root.fingerprint}) in ${where}`,
    },
  ];
  const rootFile = options.storage === undefined ? path.join(where, LocalCaKeys.rootCert) : null;
  if (options.system !== false) steps.push(await trustSystem(root, rootFile, options.system ?? {}));
  if (options.nss !== false) steps.push(await trustNss(root, options.nss ?? {}));
  return { root, steps };
}

/**
 * Removes the local CA's root from the system store and the NSS database:
 * the anchor file and the NSS entry named after this root, nothing else.
 * Never creates a CA: with no root in the cert dir there is nothing to
 * remove. Idempotent, and a store that fails does not stop the other.
 */
export async function untrustLocalRoot(options: TrustOptions = {}): Promise<TrustReport> {
  const { storage, where } = caStorage(options);
  const stored = await storage.load(LocalCaKeys.rootCert);
  if (stored === null) {
    return {
      root: null,
      steps: [{ store: 'local-ca', status: 'unchanged', message: `no local CA root in ${where}: nothing to untrust` }],
    };
  }
  const root = describeRoot(stored.toString('utf8'));
  const steps: TrustStep[] = [
    {
      store: 'local-ca',
      status: 'unchanged',
      message: `local CA root "${root.commonName}" (SHA-256 ${root.fingerprint}) in ${where}`,
    },
  ];
  if (options.system !== false) steps.push(await untrustSystem(root, options.system ?? {}));
  if (options.nss !== false) steps.push(await untrustNss(root, options.nss ?? {}));
  return { root, steps };
}

/** The storage holding the local CA and the name the report gives it. */
function caStorage(options: TrustOptions): { storage: CertificateStorage; where: string } {
  if (options.storage !== undefined) return { storage: options.storage.storage, where: options.storage.name };
  const certDir = path.resolve(options.certDir ?? DEFAULT_CERT_DIR);
  return { storage: new FileStorage(certDir), where: certDir };
}

/** Names a root certificate (PEM) the way the trust stores will see it. */
export function describeRoot(pem: string): LocalRoot {
  const certificate = new X509Certificate(pem);
  const commonName = /^CN=(.*)$/m.exec(certificate.subject)?.[1] ?? 'proxyd Local Authority';
  const fingerprint = certificate.fingerprint256.replaceAll(':', '').toLowerCase();
  const short = fingerprint.slice(0, 8);
  const slug = commonName
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
  return {
    commonName,
    fingerprint,
    fileName: `${slug}-${short}.crt`,
    nickname: `${commonName} ${short}`,
    pem: certificate.toString(),
    der: certificate.raw,
  };
}

// ─── the system store ──────────────────────────────────────────────────────

/** `rootFile`: the root's file in a cert dir, named in the hint when writing needs root (null: not in a file). */
async function trustSystem(root: LocalRoot, rootFile: string | null, store: SystemTrustStore): Promise<TrustStep> {
  const fail = (message: string): TrustStep => ({
    store: 'system',
    status: 'failed',
    message: `system store: ${message}`,
  });
  const localDir = store.localCertsDir ?? SYSTEM_DEFAULTS.localCertsDir;
  const anchor = path.join(localDir, root.fileName);
  const bundle = path.join(store.etcCertsDir ?? SYSTEM_DEFAULTS.etcCertsDir, BUNDLE);
  const command = await findProgram(store.command ?? 'update-ca-certificates');
  if (command === null) {
    return fail('update-ca-certificates not found: install the Debian package ca-certificates, then run this again');
  }
  const current = await readOrNull(anchor);
  if (current !== null && sameCertificate(current, root) && (await bundleHas(bundle, root))) {
    return { store: 'system', status: 'unchanged', message: `already trusted by the system store (${anchor})` };
  }
  try {
    await mkdir(localDir, { recursive: true, mode: 0o755 });
    await writeAtomically(anchor, root.pem, 0o644);
  } catch (err) {
    if (!isPermissionError(err)) return fail(`cannot write ${anchor}: ${errorText(err)}`);
    const by =
      rootFile === null
        ? ''
        : `, or: sudo install -m 644 ${shellQuote(rootFile)} ${shellQuote(anchor)} && sudo update-ca-certificates`;
    return fail(`writing ${localDir} needs root (${errorText(err)}); run proxyd trust as root${by}`);
  }
  const update = await run(command, systemArgs(store, false));
  if (update.code !== 0) {
    if (current === null) await rm(anchor, { force: true });
    return fail(`update-ca-certificates failed (exit ${update.code}): ${lastLines(update)}`);
  }
  if (!(await bundleHas(bundle, root))) {
    return fail(`update-ca-certificates ran but ${bundle} does not contain the root`);
  }
  return {
    store: 'system',
    status: 'changed',
    message: `installed ${anchor}; update-ca-certificates rebuilt ${bundle}`,
  };
}

async function untrustSystem(root: LocalRoot, store: SystemTrustStore): Promise<TrustStep> {
  const fail = (message: string): TrustStep => ({
    store: 'system',
    status: 'failed',
    message: `system store: ${message}`,
  });
  const localDir = store.localCertsDir ?? SYSTEM_DEFAULTS.localCertsDir;
  const anchor = path.join(localDir, root.fileName);
  const bundle = path.join(store.etcCertsDir ?? SYSTEM_DEFAULTS.etcCertsDir, BUNDLE);
  const current = await readOrNull(anchor);
  const inBundle = await bundleHas(bundle, root);
  if (current === null && !inBundle) {
    return { store: 'system', status: 'unchanged', message: `not trusted by the system store (no ${anchor})` };
  }
  const command = await findProgram(store.command ?? 'update-ca-certificates');
  if (command === null) {
    return fail('update-ca-certificates not found: install the Debian package ca-certificates, then run this again');
  }
  if (current !== null) {
    try {
      await rm(anchor);
    } catch (err) {
      if (!isPermissionError(err)) return fail(`cannot remove ${anchor}: ${errorText(err)}`);
      return fail(
        `removing ${anchor} needs root (${errorText(err)}); run proxyd untrust as root, or: ` +
          `sudo rm ${shellQuote(anchor)} && sudo update-ca-certificates --fresh`,
      );
    }
  }
  // --fresh: a plain update leaves the removed anchor's links in etcCertsDir dangling.
  const update = await run(command, systemArgs(store, true));
  if (update.code !== 0) return fail(`update-ca-certificates failed (exit ${update.code}): ${lastLines(update)}`);
  if (await bundleHas(bundle, root)) {
    return fail(
      `${bundle} still contains the root after update-ca-certificates --fresh (installed there by something other than proxyd trust?)`,
    );
  }
  return {
    store: 'system',
    status: 'changed',
    message: `removed ${current === null ? 'the root' : anchor}; update-ca-certificates rebuilt ${bundle}`,
  };
}

function systemArgs(store: SystemTrustStore, fresh: boolean): string[] {
  const args = fresh ? ['--fresh'] : [];
  if (store.localCertsDir !== undefined) args.push('--localcertsdir', store.localCertsDir);
  if (store.certsDir !== undefined) args.push('--certsdir', store.certsDir);
  if (store.etcCertsDir !== undefined) args.push('--etccertsdir', store.etcCertsDir);
  if (store.certsConf !== undefined) args.push('--certsconf', store.certsConf);
  if (store.hooksDir !== undefined) args.push('--hooksdir', store.hooksDir);
  return args;
}

/** Whether the PEM bundle holds the root (its base64 DER, whitespace ignored). */
async function bundleHas(bundle: string, root: LocalRoot): Promise<boolean> {
  const text = await readOrNull(bundle);
  return text?.replace(/\s+/g, '').includes(root.der.toString('base64')) ?? false;
}

function sameCertificate(pem: string, root: LocalRoot): boolean {
  try {
    return new X509Certificate(pem).raw.equals(root.der);
  } catch {
    return false;
  }
}

// ─── NSS ───────────────────────────────────────────────────────────────────

const CERTUTIL_MISSING =
  'certutil not found: install the Debian package libnss3-tools (apt-get install libnss3-tools), then run this again';

async function trustNss(root: LocalRoot, store: NssTrustStore): Promise<TrustStep> {
  const fail = (message: string): TrustStep => ({
    store: 'nss',
    status: 'failed',
    message: `NSS database: ${message}`,
  });
  const dbDir = store.dbDir ?? defaultNssDir();
  const db = `sql:${dbDir}`;
  const certutil = await findProgram(store.command ?? 'certutil');
  if (certutil === null) return fail(CERTUTIL_MISSING);
  let created = false;
  if (!(await exists(path.join(dbDir, 'cert9.db')))) {
    try {
      await mkdir(dbDir, { recursive: true, mode: 0o700 });
    } catch (err) {
      return fail(`cannot create ${dbDir}: ${errorText(err)}`);
    }
    const init = await run(certutil, ['-N', '--empty-password', '-d', db]);
    if (init.code !== 0) return fail(`certutil -N failed for ${db}: ${lastLines(init)}`);
    created = true;
  }
  const present = await nssEntry(certutil, db, root);
  if (present.failed !== undefined) return fail(present.failed);
  if (present.matches && present.flags === NSS_TRUST_FLAGS) {
    return {
      store: 'nss',
      status: 'unchanged',
      message: `already trusted by the NSS database ${db} ("${root.nickname}", ${NSS_TRUST_FLAGS})`,
    };
  }
  const change = present.matches
    ? await run(certutil, ['-M', '-d', db, '-n', root.nickname, '-t', NSS_TRUST_FLAGS])
    : await run(certutil, ['-A', '-d', db, '-n', root.nickname, '-t', NSS_TRUST_FLAGS], root.der);
  if (change.code !== 0) return fail(`certutil failed for ${db}: ${lastLines(change)}`);
  const after = await nssEntry(certutil, db, root);
  if (!after.matches || after.flags !== NSS_TRUST_FLAGS) {
    return fail(`certutil reported success but ${db} does not list "${root.nickname}" with ${NSS_TRUST_FLAGS}`);
  }
  return {
    store: 'nss',
    status: 'changed',
    message: `added "${root.nickname}" with trust ${NSS_TRUST_FLAGS} to the NSS database ${db}${created ? ' (created)' : ''}`,
  };
}

async function untrustNss(root: LocalRoot, store: NssTrustStore): Promise<TrustStep> {
  const fail = (message: string): TrustStep => ({
    store: 'nss',
    status: 'failed',
    message: `NSS database: ${message}`,
  });
  const dbDir = store.dbDir ?? defaultNssDir();
  const db = `sql:${dbDir}`;
  const absent: TrustStep = { store: 'nss', status: 'unchanged', message: `not trusted by the NSS database ${db}` };
  if (!(await exists(path.join(dbDir, 'cert9.db')))) return absent;
  const certutil = await findProgram(store.command ?? 'certutil');
  if (certutil === null) return fail(CERTUTIL_MISSING);
  const present = await nssEntry(certutil, db, root);
  if (present.failed !== undefined) return fail(present.failed);
  // An entry of that nickname holding another certificate is not ours to remove.
  if (!present.matches) return absent;
  const removed = await run(certutil, ['-D', '-d', db, '-n', root.nickname]);
  if (removed.code !== 0) return fail(`certutil -D failed for ${db}: ${lastLines(removed)}`);
  if ((await nssEntry(certutil, db, root)).matches) {
    return fail(`certutil reported success but ${db} still holds "${root.nickname}"`);
  }
  return { store: 'nss', status: 'changed', message: `removed "${root.nickname}" from the NSS database ${db}` };
}

/** The entry named after the root: whether it holds this very certificate, and its trust flags. */
async function nssEntry(
  certutil: string,
  db: string,
  root: LocalRoot,
): Promise<{ matches: boolean; flags: string | null; failed?: string }> {
  const shown = await run(certutil, ['-L', '-d', db, '-n', root.nickname, '-a']);
  // certutil exits 255 with "Could not find cert" for an unknown nickname.
  if (shown.code !== 0) {
    if (/could not find cert/i.test(shown.stderr)) return { matches: false, flags: null };
    return { matches: false, flags: null, failed: `certutil -L failed for ${db}: ${lastLines(shown)}` };
  }
  const matches = shown.stdout.replace(/\s+/g, '').includes(root.der.toString('base64'));
  const listed = await run(certutil, ['-L', '-d', db]);
  if (listed.code !== 0) {
    return { matches, flags: null, failed: `certutil -L failed for ${db}: ${lastLines(listed)}` };
  }
  return { matches, flags: nssFlags(listed.stdout, root.nickname) };
}

/** The trust flags `certutil -L` lists for `nickname` (the last column; nicknames may hold spaces), or null. */
export function nssFlags(listing: string, nickname: string): string | null {
  for (const line of listing.split('\n')) {
    const match = /^(.*\S)\s+(\S*,\S*,\S*)\s*$/.exec(line);
    if (match?.[1] === nickname) return match[2] ?? null;
  }
  return null;
}

function defaultNssDir(): string {
  return path.join(homedir(), '.pki', 'nssdb');
}

// ─── helpers ───────────────────────────────────────────────────────────────

/** An absolute path of `program` (a path is checked as is; a name is searched on PATH, then /usr/sbin and /sbin), or null. */
async function findProgram(program: string): Promise<string | null> {
  const candidates = program.includes('/')
    ? [program]
    : [...(process.env.PATH ?? '').split(':').filter(Boolean), '/usr/sbin', '/sbin'].map((dir) =>
        path.join(dir, program),
      );
  for (const candidate of candidates) {
    try {
      await access(candidate, constants.X_OK);
      return path.resolve(candidate);
    } catch {}
  }
  return null;
}

interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `command` with `args` (no shell), `input` on stdin; resolves its exit code and output. */
function run(command: string, args: string[], input?: Buffer): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code: code ?? (signal === null ? 1 : 128), stdout, stderr }));
    child.stdin.on('error', () => {});
    child.stdin.end(input);
  });
}

function lastLines(result: RunResult): string {
  const text = `${result.stderr}\n${result.stdout}`.trim().split('\n').slice(-3).join(' ').trim();
  return text === '' ? 'no output' : text;
}

async function writeAtomically(file: string, text: string, mode: number): Promise<void> {
  // The temp name does not end in .crt: update-ca-certificates never picks it up.
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.tmp-${process.pid}`);
  try {
    const handle = await open(tmp, 'w', mode);
    try {
      await handle.writeFile(text);
      await handle.chmod(mode);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, file);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

async function readOrNull(file: string): Promise<string | null> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch {
    return false;
  }
}

function isPermissionError(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'EACCES' || code === 'EPERM' || code === 'EROFS';
}

function errorText(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  return e.code ?? e.message ?? String(err);
}

function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replaceAll("'", `'\\''`)}'`;
}
