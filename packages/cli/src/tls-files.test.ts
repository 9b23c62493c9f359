import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse } from '@proxyd/proxyfile';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkTlsFiles, findTlsLine, lineTokens } from './tls-files.js';

/** A self-signed EC certificate and its key, made by openssl, valid for 2 days from now. */
function selfSigned(dir: string, name: string): { cert: string; key: string } {
  const cert = path.join(dir, `${name}.crt`);
  const key = path.join(dir, `${name}.key`);
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-subj',
      `/CN=${name}.test`,
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '2',
    ],
    { stdio: 'ignore' },
  );
  return { cert, key };
}

describe('lineTokens and findTlsLine', () => {
  it('split a line as the lexer does: quotes, escapes, comments, code-point columns', () => {
    expect(lineTokens('\ttls "my cert.pem" `k.pem` # comment')).toEqual([
      { text: 'tls', column: 2 },
      { text: 'my cert.pem', column: 6 },
      { text: 'k.pem', column: 20 },
    ]);
    expect(lineTokens('é tls a\\"b "c\\"d"')).toEqual([
      { text: 'é', column: 1 },
      { text: 'tls', column: 3 },
      { text: 'a\\"b', column: 7 },
      { text: 'c"d', column: 12 },
    ]);
  });

  it('finds the tls line naming both files, in whichever file read holds it', () => {
    const texts = new Map([
      ['Proxyfile', 'a.test {\n\ttls a.crt other.key\n\timport site.conf\n}\n'],
      ['site.conf', '# imported\n  tls a.crt a.key\n'],
    ]);
    expect(findTlsLine(texts, 'a.crt', 'a.key')).toEqual({ file: 'site.conf', line: 2, columns: [3, 7, 13] });
    expect(findTlsLine(texts, 'x.crt', 'a.key')).toBeNull();
  });
});

describe('checkTlsFiles (validate)', () => {
  let dir: string;
  let good: { cert: string; key: string };
  let other: { cert: string; key: string };
  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'proxyd-tls-files-'));
    good = selfSigned(dir, 'good');
    other = selfSigned(dir, 'other');
    writeFileSync(path.join(dir, 'garbage.pem'), 'not a pem\n');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** Compiles `text` (files relative to `dir`) and checks its tls files. */
  function check(text: string, now = new Date()) {
    const config = parse(text, { filename: 'Proxyfile' });
    return checkTlsFiles(config.sites, new Map([['Proxyfile', text]]), dir, now);
  }

  it('passes a readable certificate with its own key, relative to the directory it runs in', () => {
    expect(check(`a.test {\n\ttls good.crt good.key\n}\n`)).toEqual([]);
    expect(check(`a.test {\n\ttls ${good.cert} ${good.key}\n}\n`)).toEqual([]);
  });

  it('names a missing file at its token', () => {
    expect(check('a.test {\n\ttls missing.crt good.key\n}\n')).toEqual([
      {
        message: 'Proxyfile:2:6: tls certificate file "missing.crt" cannot be read: ENOENT: no such file or directory',
        fatal: true,
      },
    ]);
    expect(check('a.test {\n\ttls good.crt missing.key\n}\n')).toEqual([
      {
        message: 'Proxyfile:2:15: tls key file "missing.key" cannot be read: ENOENT: no such file or directory',
        fatal: true,
      },
    ]);
  });

  it('refuses files that are not PEM', () => {
    const [cert] = check('a.test {\n\ttls garbage.pem good.key\n}\n');
    expect(cert?.message).toMatch(/^Proxyfile:2:6: tls certificate file "garbage.pem" is not a PEM certificate: /);
    const [key] = check('a.test {\n\ttls good.crt garbage.pem\n}\n');
    expect(key?.message).toMatch(/^Proxyfile:2:15: tls key file "garbage.pem" is not a PEM private key/);
    // A certificate is no key.
    expect(check('a.test {\n\ttls good.crt good.crt\n}\n')[0]?.message).toContain('is not a PEM private key');
  });

  it('refuses a key that belongs to another certificate, at the tls directive', () => {
    expect(check('a.test {\n\ttls good.crt other.key\n}\n')).toEqual([
      {
        message: 'Proxyfile:2:2: tls key file "other.key" does not belong to the certificate in "good.crt"',
        fatal: true,
      },
    ]);
    expect(path.basename(other.key)).toBe('other.key');
  });

  it('warns about an expired certificate without failing', () => {
    const threeDaysOn = new Date(Date.now() + 3 * 86_400_000);
    expect(check('a.test {\n\ttls good.crt good.key\n}\n', threeDaysOn)).toEqual([
      {
        message: expect.stringMatching(
          /^Proxyfile:2:6: warning: tls certificate file "good.crt" expired on \d{4}-\d\d-\d\dT[\d:.]+Z$/,
        ),
        fatal: false,
      },
    ]);
    expect(path.basename(good.cert)).toBe('good.crt');
  });

  it('checks each pair once, and says it without a position when the line is not found', () => {
    const text = 'a.test {\n\ttls {$CERT} good.key\n}\nb.test {\n\ttls {$CERT} good.key\n}\n';
    const config = parse(text, { filename: 'Proxyfile', env: { CERT: 'nope.crt' } });
    expect(checkTlsFiles(config.sites, new Map([['Proxyfile', text]]), dir)).toEqual([
      { message: 'tls certificate file "nope.crt" cannot be read: ENOENT: no such file or directory', fatal: true },
    ]);
  });
});
