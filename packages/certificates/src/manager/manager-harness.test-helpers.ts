import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach } from 'vitest';
import { CertificatesErrorCode } from '../errors.js';
import { FileStorage } from '../storage/file-storage.js';
import type { CertificateStorage } from '../storage/storage.js';
import { type CertificateChange, CertificateManager, type CertificateManagerOptions } from './certificate-manager.js';
import { acmeError, type FakeAcmeIssuer, FakeTime, MemoryLogger } from './manager.test-helpers.js';
import { storeCertificate } from './stored-certificate.js';

/**
 * The CertificateManager tests' harness (obtain, maintain, serve and jobs
 * tests share it): call once at a test file's top level; managers it made
 * are closed and temp dirs removed after each test.
 */
export function managerHarness() {
  const managers: CertificateManager[] = [];
  const tempDirs: string[] = [];

  afterEach(async () => {
    for (const manager of managers.splice(0)) {
      manager.close();
      await manager.whenIdle();
    }
    for (const dir of tempDirs.splice(0)) await rm(dir, { recursive: true, force: true });
  });

  async function tempStorage(): Promise<{ root: string; storage: FileStorage }> {
    const root = await mkdtemp(path.join(tmpdir(), 'proxyd-manager-'));
    tempDirs.push(root);
    return { root, storage: new FileStorage(root) };
  }

  /** A fake clock and scheduler, a log, and managers on them that the test cleans up. */
  function setup() {
    const time = new FakeTime();
    const log = new MemoryLogger();
    const changes: CertificateChange[] = [];
    const created: CertificateManager[] = [];
    const make = (options: Partial<CertificateManagerOptions> & { storage: CertificateStorage }) => {
      const manager = new CertificateManager({
        now: time.clock,
        scheduler: time,
        logger: log,
        random: () => 0,
        // The exact 1/3 rule; the spread has its own test (issuance-queue.test.ts).
        renewalSpread: 0,
        ...options,
      });
      manager.onChange((change) => changes.push(change));
      managers.push(manager);
      created.push(manager);
      return manager;
    };
    const settle = () => Promise.all(created.map((m) => m.whenIdle()));
    const advance = (ms: number) => time.advance(ms, settle);
    return { time, log, changes, make, settle, advance };
  }

  return { tempStorage, setup };
}

/** Stores a certificate of `issuer` for `name` as an earlier run would have, and forgets the order. */
export async function storeIssued(storage: CertificateStorage, issuer: FakeAcmeIssuer, name: string) {
  const issued = await issuer.obtain([name]);
  issuer.orders.length = 0;
  const ca = issuer.accountFolder.split('/')[1] as string;
  await storeCertificate(
    storage,
    ca,
    { certPem: issued.certificatePem, keyPem: issued.privateKeyPem },
    {
      name,
      issuer: issuer.directoryUrl,
      notBefore: issued.notBefore,
      notAfter: issued.notAfter,
      ari: null,
      lastError: null,
      nextAttemptAt: null,
      backoff: null,
      validationFailures: [],
    },
  );
  return issued;
}

/** The CA cannot be reached (as acme-client's transport reports it). */
export const unreachable = () =>
  acmeError(CertificatesErrorCode.ACME_UNREACHABLE, 'ACME CA unreachable: connect ECONNREFUSED 127.0.0.1:14000');

/** The CA could not validate `name`'s challenge. */
export const validationFailed = (name: string) =>
  acmeError(CertificatesErrorCode.ACME_VALIDATION_FAILED, `ACME CA could not validate ${name}`, {
    type: 'urn:ietf:params:acme:error:unauthorized',
  });
