import { describe, expect, it } from 'vitest';
import { CertificatesError } from '../errors.js';
import { accountFolder } from './account.js';
import { AcmeIssuer } from './acme-issuer.js';
import { MemoryStorage } from './memory-storage.test-helpers.js';

describe('accountFolder', () => {
  it('keys the account by CA directory and email', () => {
    expect(accountFolder('https://acme-v02.api.letsencrypt.org/directory', 'Ops@Example.com')).toBe(
      'acme/acme-v02.api.letsencrypt.org-directory/ops@example.com',
    );
    expect(accountFolder('https://127.0.0.1:14000/dir', undefined)).toBe('acme/127.0.0.1-14000-dir/default');
    expect(accountFolder('https://ca.example/acme/', 'a/../b@x')).toBe('acme/ca.example-acme/a_.._b@x');
  });
});

describe('a stored account that does not parse', () => {
  it('is reported with its key and left as it is', async () => {
    const storage = new MemoryStorage();
    // Port 9 (discard) on loopback: nothing is contacted, the stored account fails first.
    const issuer = new AcmeIssuer({
      directoryUrl: 'https://127.0.0.1:9/dir',
      storage,
      solver: { present() {}, cleanUp() {} },
    });
    const key = `${issuer.accountFolder}/account.json`;
    await storage.store(key, '{"url": 42');

    const err = await issuer.accountUrl().catch((e: unknown) => e);

    expect(err).toBeInstanceOf(CertificatesError);
    expect((err as CertificatesError).code).toBe('CERT_ACME_ACCOUNT_INVALID');
    expect((err as CertificatesError).message).toContain(key);
    expect((await storage.load(key))?.toString()).toBe('{"url": 42');
    issuer.close();
  });
});
