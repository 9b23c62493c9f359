import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import dgram from 'node:dgram';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';

/** Options of {@link preparePebble}. */
export interface PebbleOptions {
  /** The port pebble's validation authority fetches HTTP-01 answers from (the daemon's `http_port`). */
  httpPort: number;
  /** The port it makes TLS-ALPN-01 handshakes to (the daemon's `https_port`). */
  tlsPort: number;
  /** Lifetime of issued certificates, seconds (pebble's default: 5 years). */
  validitySeconds?: number;
  /** EAB key id → HMAC key (base64url); when set, pebble requires external account binding. */
  externalAccountMACKeys?: Record<string, string>;
  /** Extra environment for pebble (e.g. `PEBBLE_WFE_NONCEREJECT`). */
  env?: Record<string, string>;
  /**
   * `host:port` of the DNS server pebble resolves through (DNS-01 TXT
   * lookups included), e.g. a {@link startBind} server. Default: the mock
   * DNS, started beside pebble.
   */
  dnsServer?: string;
  /**
   * The address the mock DNS answers for every name (default `127.0.0.1`):
   * where pebble sends its HTTP-01 and TLS-ALPN-01 validation requests,
   * e.g. one node of several on 127.0.0.x.
   */
  defaultIPv4?: string;
  /**
   * The address pebble's API listens on (default `127.0.0.1`), e.g. a test
   * bridge's ({@link createFleetNetwork}) for nodes in their own network
   * namespaces; its API certificate names it.
   */
  address?: string;
}

/**
 * A pebble ACME CA (Debian's `pebble`, Let's Encrypt's test server) and its
 * mock DNS (`pebble-challtestsrv`: every name → 127.0.0.1 or `defaultIPv4`, no AAAA), all on
 * loopback. Ports and pebble's API certificate are fixed when prepared, so a
 * daemon can be pointed at a CA that is not up yet, and the CA can stop and
 * start again on the same address.
 */
export interface Pebble {
  /** `https://127.0.0.1:<port>/dir` (or the `address` given): the Proxyfile's `acme_ca`. */
  readonly directoryUrl: string;
  /** The PEM file that signed pebble's API certificate: the Proxyfile's `acme_ca_root`. */
  readonly apiCaFile: string;
  /** Its content. */
  readonly apiCaPem: string;
  /** Starts pebble and the mock DNS, and waits for the directory. */
  start(): Promise<void>;
  /** Pebble's issuing root of the current run, PEM (pebble makes a new one at every start). */
  rootPem(): Promise<string>;
  /** How many orders pebble was asked for since it last started (its "There are now N orders" log). */
  orders(): number;
  /** The end of what pebble and the mock DNS wrote, for failure messages. */
  log(): string;
  /** Stops pebble and the mock DNS; `start()` may be called again. */
  stop(): Promise<void>;
  /** Stops and removes the temp dir. */
  dispose(): Promise<void>;
}

/** How long pebble may take to answer its directory before `start` fails, ms: a bound only a hang reaches. */
const PEBBLE_UP_WITHIN_MS = 120_000;
/** Ports this process has handed out: the kernel may give a closed one back at once. */
const handedOut = new Set<number>();

/**
 * A TCP port free on 127.0.0.1 right now, and not one this process has
 * handed out before: two calls in a row once returned the same port, and
 * pebble and its DNS server then raced for it.
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as net.AddressInfo;
    await new Promise((resolve) => server.close(resolve));
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    return port;
  }
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

/** Makes pebble's API certificate (the Debian package ships none) in `dir`. */
function makeApiCertificate(dir: string, address: string): void {
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
    path.join(dir, 'ext.cnf'),
    `subjectAltName=DNS:localhost,IP:127.0.0.1${address === '127.0.0.1' ? '' : `,IP:${address}`}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n`,
  );
  openssl(
    ...['x509', '-req', '-in', 'cert.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial'],
    ...['-days', '30', '-extfile', 'ext.cnf', '-out', 'cert.pem'],
  );
}

/** Writes pebble's certificate and config on free loopback ports; nothing runs until {@link Pebble.start}. */
export async function preparePebble(options: PebbleOptions): Promise<Pebble> {
  const dir = mkdtempSync(path.join(tmpdir(), 'proxyd-pebble-'));
  const address = options.address ?? '127.0.0.1';
  makeApiCertificate(dir, address);
  const [port, mgmtPort, dnsPort, dnsMgmtPort] = [
    await freePort(),
    await freePort(),
    await freeDualPort(),
    await freePort(),
  ];
  writeFileSync(
    path.join(dir, 'pebble-config.json'),
    JSON.stringify({
      pebble: {
        listenAddress: `${address}:${port}`,
        managementListenAddress: `${address}:${mgmtPort}`,
        certificate: path.join(dir, 'cert.pem'),
        privateKey: path.join(dir, 'key.pem'),
        httpPort: options.httpPort,
        tlsPort: options.tlsPort,
        ocspResponderURL: '',
        externalAccountBindingRequired: options.externalAccountMACKeys !== undefined,
        ...(options.externalAccountMACKeys === undefined
          ? {}
          : { externalAccountMACKeys: options.externalAccountMACKeys }),
        ...(options.validitySeconds === undefined ? {} : { certificateValidityPeriod: options.validitySeconds }),
      },
    }),
  );
  const apiCaFile = path.join(dir, 'ca.pem');
  const apiCaPem = readFileSync(apiCaFile, 'utf8');
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
  let children: ChildProcess[] = [];
  let output = '';
  const run = (command: string, args: string[], env: NodeJS.ProcessEnv = process.env) => {
    const child = spawn(command, args, { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const append = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-200_000);
    };
    child.stdout?.on('data', append);
    child.stderr?.on('data', append);
    children.push(child);
  };
  const directoryUrl = `https://${address}:${port}/dir`;
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
    children = [];
  };
  return {
    directoryUrl,
    apiCaFile,
    apiCaPem,
    async start() {
      output = '';
      if (options.dnsServer === undefined) {
        run('pebble-challtestsrv', [
          ...['-dns01', `127.0.0.1:${dnsPort}`, '-http01', '', '-https01', '', '-tlsalpn01', ''],
          ...[
            '-management',
            `127.0.0.1:${dnsMgmtPort}`,
            '-defaultIPv4',
            options.defaultIPv4 ?? '127.0.0.1',
            '-defaultIPv6',
            '',
          ],
        ]);
      }
      run('pebble', ['-config', 'pebble-config.json', '-dnsserver', options.dnsServer ?? `127.0.0.1:${dnsPort}`], {
        ...process.env,
        PEBBLE_VA_NOSLEEP: '1',
        PEBBLE_WFE_NONCEREJECT: '0',
        ...options.env,
      });
      // Up once its directory answers; failed once a process of it exited, or after a bound only a hang
      // reaches. Beside a CPU hog at nice 19 pebble took over the 5 s this was (its start makes keys).
      const end = Date.now() + PEBBLE_UP_WITHIN_MS;
      for (;;) {
        try {
          await get(directoryUrl);
          return;
        } catch (err) {
          const exited = children.find((child) => child.exitCode !== null || child.signalCode !== null);
          if (exited !== undefined || Date.now() > end) {
            await stop();
            const why = exited === undefined ? `not up within ${PEBBLE_UP_WITHIN_MS} ms` : `${exited.spawnfile} exited`;
            throw new Error(`pebble did not come up (${why}): ${(err as Error).message}\n${output.slice(-4000)}`);
          }
          await delay(50);
        }
      }
    },
    rootPem: () => get(`https://${address}:${mgmtPort}/roots/0`),
    orders: () => output.match(/There are now \d+ orders/g)?.length ?? 0,
    log: () => output.slice(-4000),
    stop,
    async dispose() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A pebble prepared and started, with its issuing root already read. */
export interface StartedPebble {
  readonly directoryUrl: string;
  readonly apiCaFile: string;
  readonly apiCaPem: string;
  /** Pebble's issuing root, PEM: issued chains verify against it. */
  readonly rootPem: string;
  /** Stops pebble and the mock DNS and removes the temp dir. */
  stop(): Promise<void>;
}

/** {@link preparePebble} and start it in one call. */
export async function startPebble(options: PebbleOptions): Promise<StartedPebble> {
  const pebble = await preparePebble(options);
  try {
    await pebble.start();
    return {
      directoryUrl: pebble.directoryUrl,
      apiCaFile: pebble.apiCaFile,
      apiCaPem: pebble.apiCaPem,
      rootPem: await pebble.rootPem(),
      stop: () => pebble.dispose(),
    };
  } catch (err) {
    await pebble.dispose();
    throw err;
  }
}

/** The Proxyfile global options that point proxyd at `pebble`. */
export function acmeGlobal(pebble: Pick<Pebble, 'directoryUrl' | 'apiCaFile'>): string {
  return `\temail ops@proxyd.test\n\tacme_ca ${pebble.directoryUrl}\n\tacme_ca_root ${pebble.apiCaFile}\n`;
}
