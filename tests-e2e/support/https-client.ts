import { execFile } from 'node:child_process';
import tls from 'node:tls';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** What `curl` got over HTTPS: status and body, or the error curl printed. */
export interface CurlResult {
  ok: boolean;
  status: number;
  body: string;
  error: string;
}

/**
 * One `curl` request to `https://<name>:<port><path>` with `name` resolved
 * to 127.0.0.1 and only `caFile` trusted: `ok` means the certificate
 * verified for that name and an HTTP answer came back. `maxTimeSeconds`
 * bounds the whole request (curl's `--max-time`, default 5).
 */
export async function curlHttps(
  name: string,
  port: number,
  caFile: string,
  urlPath = '/',
  maxTimeSeconds = 5,
): Promise<CurlResult> {
  try {
    const { stdout } = await run(
      'curl',
      [
        ...['-sS', '--max-time', String(maxTimeSeconds), '--cacert', caFile, '--resolve', `${name}:${port}:127.0.0.1`],
        ...['-w', '\n%{http_code}', `https://${name}:${port}${urlPath}`],
      ],
      { encoding: 'utf8' },
    );
    const cut = stdout.lastIndexOf('\n');
    return { ok: true, status: Number(stdout.slice(cut + 1)), body: stdout.slice(0, cut), error: '' };
  } catch (err) {
    return { ok: false, status: 0, body: '', error: (err as { stderr?: string }).stderr ?? String(err) };
  }
}

/** The serial number and issuer of the certificate served for `name` on 127.0.0.1:`port` (not verified). */
export function servedCertificate(
  name: string,
  port: number,
): Promise<{ serial: string; issuer: string; validTo: string }> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, servername: name, rejectUnauthorized: false }, () => {
      const cert = socket.getPeerX509Certificate();
      socket.destroy();
      if (!cert) reject(new Error(`no certificate for ${name}`));
      else resolve({ serial: cert.serialNumber, issuer: cert.issuer, validTo: cert.validTo });
    });
    socket.once('error', reject);
  });
}
