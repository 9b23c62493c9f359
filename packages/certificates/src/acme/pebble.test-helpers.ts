import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import dgram from 'node:dgram';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';

/** Options of {@link startPebble}. */
export interface PebbleOptions {
  /** The port pebble's VA fetches HTTP-01 responses from (the test's responder). */
  httpPort: number;
  /** The port pebble's VA makes TLS-ALPN-01 handshakes to (the test's responder). */
  tlsPort: number;
  /** Lifetime of issued certificates, seconds (pebble's default: 5 years). */
  certificateValidityPeriod?: number;
  /** EAB key id → HMAC key (base64url); when set, pebble requires external account binding. */
  externalAccountMACKeys?: Record<string, string>;
  /** Extra environment for pebble (e.g. `PEBBLE_WFE_NONCEREJECT`). */
  env?: Record<string, string>;
}

/** A running pebble ACME CA and its mock DNS, all on 127.0.0.1. */
export interface Pebble {
  /** `https://127.0.0.1:<port>/dir`. */
  directoryUrl: string;
  /** The PEM root that signed pebble's API certificate (what `acme_ca_root` would name). */
  apiCaPem: string;
  /** Pebble's issuing root, PEM (regenerated at every start): issued chains verify against it. */
  rootPem: string;
  /** Stops pebble and the mock DNS and removes the temp dir. */
  stop(): Promise<void>;
}

/** A TCP port free on 127.0.0.1 right now. */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A port free for both TCP and UDP on 127.0.0.1 (the mock DNS listens on both). */
async function freeDualPort(): Promise<number> {
  for (;;) {
    const port = await freePort();
    const socket = dgram.createSocket('udp4');
    const ok = await new Promise<boolean>((resolve) => {
      socket.once('error', () => resolve(false));
      socket.bind(port, '127.0.0.1', () => resolve(true));
    });
    await new Promise<void>((resolve) => socket.close(() => resolve()));
    if (ok) return port;
  }
}

/**
 * Starts pebble-challtestsrv (mock DNS: every name → 127.0.0.1, no AAAA, its
 * own responders off) and pebble (validation without sleeps, no rejected
 * nonces) on free loopback ports in a temp dir, waits for the directory,
 * and fetches pebble's root. The caller stops it.
 */
export async function startPebble(options: PebbleOptions): Promise<Pebble> {
  const dir = mkdtempSync(join(tmpdir(), 'proxyd-pebble-'));
  const children: ChildProcess[] = [];
  const stop = async () => {
    await Promise.all(
      children.map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.kill('SIGTERM');
          }),
      ),
    );
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    // Pebble's API certificate: the Debian package ships none (see pebble-up.sh).
    const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
    const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
    openssl(
      'req',
      '-x509',
      ...ec,
      '-days',
      '30',
      '-subj',
      '/CN=pebble api test CA',
      '-keyout',
      'ca.key',
      '-out',
      'ca.pem',
    );
    openssl('req', ...ec, '-subj', '/CN=localhost', '-keyout', 'key.pem', '-out', 'cert.csr');
    writeFileSync(
      join(dir, 'ext.cnf'),
      'subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n',
    );
    openssl(
      'x509',
      '-req',
      '-in',
      'cert.csr',
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-days',
      '30',
      '-extfile',
      'ext.cnf',
      '-out',
      'cert.pem',
    );
    const [port, mgmtPort, dnsPort, dnsMgmtPort] = [
      await freePort(),
      await freePort(),
      await freeDualPort(),
      await freePort(),
    ];
    writeFileSync(
      join(dir, 'pebble-config.json'),
      JSON.stringify({
        pebble: {
          listenAddress: `127.0.0.1:${port}`,
          managementListenAddress: `127.0.0.1:${mgmtPort}`,
          certificate: join(dir, 'cert.pem'),
          privateKey: join(dir, 'key.pem'),
          httpPort: options.httpPort,
          tlsPort: options.tlsPort,
          ocspResponderURL: '',
          externalAccountBindingRequired: options.externalAccountMACKeys !== undefined,
          ...(options.externalAccountMACKeys === undefined
            ? {}
            : { externalAccountMACKeys: options.externalAccountMACKeys }),
          ...(options.certificateValidityPeriod === undefined
            ? {}
            : { certificateValidityPeriod: options.certificateValidityPeriod }),
        },
      }),
    );
    const log = (name: string, child: ChildProcess) => {
      const chunks: Buffer[] = [];
      child.stdout?.on('data', (c: Buffer) => chunks.push(c));
      child.stderr?.on('data', (c: Buffer) => chunks.push(c));
      children.push(child);
      return () => `${name}: ${Buffer.concat(chunks).toString().slice(-2000)}`;
    };
    const dnsLog = log(
      'challtestsrv',
      spawn(
        'pebble-challtestsrv',
        [
          ...['-dns01', `127.0.0.1:${dnsPort}`, '-http01', '', '-https01', '', '-tlsalpn01', ''],
          ...['-management', `127.0.0.1:${dnsMgmtPort}`, '-defaultIPv4', '127.0.0.1', '-defaultIPv6', ''],
        ],
        { cwd: dir },
      ),
    );
    const pebbleLog = log(
      'pebble',
      spawn('pebble', ['-config', 'pebble-config.json', '-dnsserver', `127.0.0.1:${dnsPort}`], {
        cwd: dir,
        env: { ...process.env, PEBBLE_VA_NOSLEEP: '1', PEBBLE_WFE_NONCEREJECT: '0', ...options.env },
      }),
    );
    const apiCaPem = readFileSync(join(dir, 'ca.pem'), 'utf8');
    const get = (url: string) =>
      new Promise<string>((resolve, reject) => {
        https
          .get(url, { ca: apiCaPem }, (res) => {
            let body = '';
            res.on('data', (chunk: Buffer) => {
              body += chunk.toString();
            });
            res.on('end', () =>
              res.statusCode === 200 ? resolve(body) : reject(new Error(`${url}: ${res.statusCode}`)),
            );
          })
          .on('error', reject);
      });
    const directoryUrl = `https://127.0.0.1:${port}/dir`;
    for (let attempt = 0; ; attempt++) {
      try {
        await get(directoryUrl);
        break;
      } catch (err) {
        if (attempt >= 100)
          throw new Error(`pebble did not come up: ${(err as Error).message}\n${pebbleLog()}\n${dnsLog()}`);
        await delay(50);
      }
    }
    const rootPem = await get(`https://127.0.0.1:${mgmtPort}/roots/0`);
    return { directoryUrl, apiCaPem, rootPem, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
