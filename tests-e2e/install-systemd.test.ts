import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { logLines, socketCall, waitUntil } from './support/admin.js';
import { ROOT } from './support/conformance.js';
import {
  PROXYD_MAIN,
  proxydCommand,
  type RunningProxyd,
  request,
  startProxyd,
  startUpstream,
} from './support/proxyd.js';

const run = promisify(execFile);
const UNIT = path.join(ROOT, 'packaging/proxyd.service');
const EXAMPLE = path.join(ROOT, 'packaging/Proxyfile.example');
/** Where the unit expects the binary and the Proxyfile. */
const UNIT_BIN = '/usr/local/bin/proxyd';
const UNIT_CONFIG = '/etc/proxyd/Proxyfile';

/** The unit's `[Service]` settings: name → every value, in order. */
function serviceSettings(text: string): Map<string, string[]> {
  const settings = new Map<string, string[]>();
  let section = '';
  for (const line of text.split('\n')) {
    const header = /^\[(\w+)\]$/.exec(line);
    if (header?.[1]) section = header[1];
    const setting = /^(\w+)=(.*)$/.exec(line);
    if (section === 'Service' && setting?.[1] !== undefined && setting[2] !== undefined) {
      settings.set(setting[1], [...(settings.get(setting[1]) ?? []), setting[2]]);
    }
  }
  return settings;
}

/** A command line of the unit as argv, the proxyd binary and the Proxyfile path swapped for `swap`'s. */
function argv(line: string, swap: Record<string, string>): string[] {
  return line.split(/\s+/).map((word) => swap[word] ?? word);
}

// Issue 21: packaging/proxyd.service is hardened, well-formed for systemd,
// and its command lines are ones this proxyd accepts; packaging/Proxyfile.example
// validates. systemd-analyze reads the unit offline (nothing is booted).
describe('packaging/: the systemd unit and the example Proxyfile', () => {
  let unitText: string;
  let settings: Map<string, string[]>;
  let scratch: string;
  let unitCopy: string;

  beforeAll(async () => {
    unitText = await readFile(UNIT, 'utf8');
    settings = serviceSettings(unitText);
    scratch = await mkdtemp(path.join(tmpdir(), 'proxyd-unit-'));
    // verify checks that ExecStart's program exists and is executable: point it at the built entry.
    unitCopy = path.join(scratch, 'proxyd.service');
    await writeFile(unitCopy, unitText.replaceAll(UNIT_BIN, PROXYD_MAIN));
  });

  afterAll(async () => {
    await rm(scratch, { recursive: true, force: true });
  });

  it('passes systemd-analyze verify', async () => {
    const { stdout, stderr } = await run('systemd-analyze', ['verify', unitCopy]);
    expect(`${stdout}${stderr}`).toBe('');
  });

  it('scores as OK (exposure ≤ 2.0) in systemd-analyze security, with each hardening setting on', async () => {
    await run('systemd-analyze', ['security', '--offline=yes', '--threshold=20', unitCopy]);
    const { stdout } = await run('systemd-analyze', ['security', '--offline=yes', '--json=short', unitCopy]);
    const checks = new Map(
      (JSON.parse(stdout) as Array<{ name: string; set: boolean }>).map((check) => [check.name, check.set]),
    );
    for (const name of [
      'NoNewPrivileges=',
      'User=/DynamicUser=',
      'ProtectSystem=',
      'ProtectHome=',
      'PrivateTmp=',
      'PrivateDevices=',
      'ProtectKernelTunables=',
      'ProtectControlGroups=',
      'RestrictSUIDSGID=',
      'LockPersonality=',
      'RestrictAddressFamilies=~AF_PACKET',
      'SystemCallFilter=~@privileged',
      'SystemCallArchitectures=',
      'CapabilityBoundingSet=~CAP_SYS_ADMIN',
      'CapabilityBoundingSet=~CAP_(DAC_*|FOWNER|IPC_OWNER)',
    ]) {
      expect([name, checks.get(name)]).toEqual([name, true]);
    }
  });

  it('stops with SIGTERM to proxyd and waits longer than any grace period before SIGKILL', async () => {
    expect(settings.get('KillMode')).toEqual(['mixed']);
    expect(settings.get('ExecReload')).toEqual(['/bin/kill -HUP $MAINPID']);
    const timeout = /^(\d+)s$/.exec(settings.get('TimeoutStopSec')?.[0] ?? '');
    const grace = /^\tgrace_period (\d+)s$/m.exec(await readFile(EXAMPLE, 'utf8'));
    // The daemon's default grace period is 30 s; the example's is shorter.
    expect(Number(timeout?.[1])).toBeGreaterThan(30);
    expect(Number(grace?.[1])).toBeLessThan(30);
    expect(settings.get('AmbientCapabilities')).toEqual(['CAP_NET_BIND_SERVICE']);
    expect(settings.get('CapabilityBoundingSet')).toEqual(['CAP_NET_BIND_SERVICE']);
    expect(settings.get('StateDirectory')).toEqual(['proxyd']);
  });

  it('ExecStartPre (proxyd validate) accepts the example Proxyfile, which is formatted', async () => {
    const [pre] = settings.get('ExecStartPre') ?? [];
    const [, ...args] = argv(pre ?? '', { [UNIT_CONFIG]: EXAMPLE });
    const validate = proxydCommand(args);
    const { stdout } = await run(validate.file, validate.args);
    expect(stdout).toMatch(/^Valid configuration: 4 sites, 4 upstreams/);
    const fmt = proxydCommand(['fmt', '--check', EXAMPLE]);
    await run(fmt.file, fmt.args);
  });

  describe("ExecStart's flags, with the unit's directories in a scratch directory", () => {
    let proxyd: RunningProxyd | undefined;
    afterAll(async () => {
      await proxyd?.stop();
    });

    it('start the daemon with its admin socket; SIGHUP (ExecReload) reloads; SIGTERM stops it', async () => {
      const upstream = await startUpstream((_req, res) => res.end('unit'));
      try {
        const [start] = settings.get('ExecStart') ?? [];
        const words = argv(start ?? '', {});
        expect(words.slice(0, 2)).toEqual([UNIT_BIN, 'run']);
        const socket = path.join(scratch, 'admin.sock');
        // startProxyd passes --config itself; the state and runtime directories move to the scratch directory.
        const flags = words.slice(2);
        const config = flags.indexOf('--config');
        flags.splice(config, 2);
        const swapped = flags.map((word) =>
          word === '/var/lib/proxyd' ? path.join(scratch, 'state') : word === '/run/proxyd/admin.sock' ? socket : word,
        );
        expect(swapped).toEqual(['--state-dir', path.join(scratch, 'state'), '--admin-socket', socket]);
        proxyd = await startProxyd({
          sites: `http://unit.test {\n\treverse_proxy 127.0.0.1:${upstream.port}\n}\n`,
          args: swapped,
        });
        expect((await socketCall(socket, 'GET', '/health')).status).toBe(200);
        const via = (host: string) => request(proxyd?.httpPort ?? 0, { headers: { host } });
        expect((await via('unit.test')).body).toBe('unit');

        const text = await readFile(proxyd.configPath, 'utf8');
        await writeFile(proxyd.configPath, text.replace('http://unit.test', 'http://reloaded.test'));
        proxyd.child.kill('SIGHUP');
        await waitUntil(async () => (await via('reloaded.test')).status === 200);
        expect((await via('unit.test')).status).toBe(404);

        // stop(): SIGTERM, then SIGKILL after 5 s (well within TimeoutStopSec); 0 means the SIGTERM did it.
        expect(await proxyd.stop()).toBe(0);
        expect(logLines(proxyd.output()).some((l) => l.msg === 'proxyd ready')).toBe(true);
      } finally {
        await upstream.close();
      }
    });
  });
});
