import { execFileSync } from 'node:child_process';
import path from 'node:path';

/**
 * Writes a self-signed certificate made with openssl (EC P-256, valid 2
 * days) for the DNS `names` as `<dir>/cert.pem` and `<dir>/key.pem`: the
 * first name is the CN and every name a subjectAltName. Returns both paths.
 */
export function selfSigned(dir: string, names: string[]): { cert: string; key: string } {
  const cert = path.join(dir, 'cert.pem');
  const key = path.join(dir, 'key.pem');
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
      '-days',
      '2',
      '-subj',
      `/CN=${names[0]}`,
      '-addext',
      `subjectAltName=${names.map((n) => `DNS:${n}`).join(',')}`,
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { stdio: 'ignore' },
  );
  return { cert, key };
}
