import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import dgram from 'node:dgram';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';

/** One zone BIND serves: its origin and the records after the SOA and NS (zone-file lines, relative names allowed). */
export interface BindZone {
  /** The origin without the trailing dot, e.g. `example.com`. */
  name: string;
  /** Extra zone-file lines, e.g. `www IN A 127.0.0.1`. */
  records?: string[];
}

/** Options of {@link startBind}. */
export interface BindOptions {
  zones: BindZone[];
  /** The TSIG key's name (default `proxyd-key`). */
  keyName?: string;
  /** Its algorithm (default `hmac-sha256`). */
  algorithm?: string;
}

/**
 * A real BIND 9 (Debian's `bind9`: `named -g`) authoritative for the given
 * zones on 127.0.0.1 and a free high port (UDP and TCP), run as the current
 * user from a temp dir. Each zone accepts RFC 2136 updates of TXT records
 * signed with one TSIG key (`update-policy { grant <key> zonesub TXT; }`);
 * its SOA names `ns1.<zone>` (127.0.0.1) as the only NS.
 */
export interface StartedBind {
  /** `127.0.0.1:<port>`. */
  readonly address: string;
  readonly port: number;
  /** The TSIG key the zones accept updates with: name, algorithm, secret (base64). */
  readonly key: { name: string; algorithm: string; secret: string };
  /** `dig +short` against this server: the answers of `name` `type`, one per line, `""` when none. */
  dig(name: string, type: string): string;
  /** The end of what named wrote, for failure messages. */
  log(): string;
  /** Stops named and removes the temp dir. */
  stop(): Promise<void>;
}

async function freeDualPort(): Promise<number> {
  for (;;) {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as net.AddressInfo;
    await new Promise((resolve) => server.close(resolve));
    const socket = dgram.createSocket('udp4');
    const ok = await new Promise<boolean>((resolve) => {
      socket.once('error', () => resolve(false));
      socket.bind(port, '127.0.0.1', () => resolve(true));
    });
    await new Promise<void>((resolve) => socket.close(() => resolve()));
    if (ok) return port;
  }
}

/** Starts BIND for `options.zones` and waits until it answers the first zone's SOA. */
export async function startBind(options: BindOptions): Promise<StartedBind> {
  const dir = mkdtempSync(path.join(tmpdir(), 'proxyd-bind-'));
  const port = await freeDualPort();
  const key = {
    name: options.keyName ?? 'proxyd-key',
    algorithm: options.algorithm ?? 'hmac-sha256',
    secret: randomBytes(32).toString('base64'),
  };
  const zones = options.zones
    .map((zone) => {
      const file = path.join(dir, `${zone.name}.zone`);
      writeFileSync(
        file,
        [
          '$TTL 60',
          `@ IN SOA ns1.${zone.name}. hostmaster.${zone.name}. 1 60 60 600 60`,
          `@ IN NS ns1.${zone.name}.`,
          'ns1 IN A 127.0.0.1',
          ...(zone.records ?? []),
          '',
        ].join('\n'),
      );
      return `zone "${zone.name}" { type primary; file "${file}"; update-policy { grant ${key.name} zonesub TXT; }; };`;
    })
    .join('\n');
  const conf = path.join(dir, 'named.conf');
  writeFileSync(
    conf,
    `options {
  directory "${dir}";
  pid-file "${path.join(dir, 'named.pid')}";
  session-keyfile "${path.join(dir, 'session.key')}";
  managed-keys-directory "${dir}";
  listen-on port ${port} { 127.0.0.1; };
  listen-on-v6 { none; };
  recursion no;
  dnssec-validation no;
  allow-query { any; };
  notify no;
};
controls { };
key "${key.name}" { algorithm ${key.algorithm}; secret "${key.secret}"; };
${zones}
`,
  );
  let output = '';
  const child: ChildProcess = spawn('named', ['-g', '-c', conf, '-n', '1'], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const append = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-100_000);
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      await new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      });
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const dig = (name: string, type: string) =>
    execFileSync('dig', ['+short', '+norecurse', '+time=2', '+tries=1', '-p', String(port), '@127.0.0.1', name, type], {
      encoding: 'utf8',
    }).trim();
  const first = options.zones[0]?.name ?? '.';
  for (let attempt = 0; ; attempt++) {
    if (child.exitCode !== null) {
      await stop();
      throw new Error(`named exited (${child.exitCode}):\n${output.slice(-4000)}`);
    }
    try {
      if (dig(first, 'SOA') !== '' && output.includes('running')) break;
    } catch {
      // not listening yet
    }
    if (attempt >= 100) {
      await stop();
      throw new Error(`named did not answer:\n${output.slice(-4000)}`);
    }
    await delay(100);
  }
  return { address: `127.0.0.1:${port}`, port, key, dig, log: () => output.slice(-4000), stop };
}
