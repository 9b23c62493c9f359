import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type StartedBind, startBind } from '@proxyd/test-peers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CertificatesErrorCode } from '../errors.js';
import { Dns01Solver, dnsStepOf } from './dns01-solver.js';
import { ExecProvider } from './exec.js';

/** The exec provider with real scripts: its arguments and environment, failures, a timeout, and nsupdate against BIND. */
let dir: string;
let bind: StartedBind;
const record = {
  zone: 'example.com',
  fqdn: '_acme-challenge.www.example.com',
  relativeName: '_acme-challenge.www',
  value: 'x'.repeat(43),
  ttl: 60,
};

function script(name: string, body: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, `#!/bin/sh\n${body}\n`);
  chmodSync(file, 0o700);
  return file;
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'proxyd-exec-'));
  bind = await startBind({ zones: [{ name: 'example.com' }] });
});
afterAll(async () => {
  await bind?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('ExecProvider', () => {
  it('runs the program with present/cleanup, the name with a dot and the value, and the record in its environment', async () => {
    const log = path.join(dir, 'calls.log');
    const hook = script(
      'hook.sh',
      `echo "$1 $2 $3 zone=$PROXYD_DNS_ZONE name=$PROXYD_DNS_NAME fqdn=$PROXYD_DNS_FQDN ttl=$PROXYD_DNS_TTL value=$PROXYD_DNS_VALUE" >> ${log}`,
    );
    const provider = new ExecProvider({ command: hook });
    await provider.appendTxt(record);
    await provider.deleteTxt(record);
    const v = record.value;
    expect(readFileSync(log, 'utf8').trim().split('\n')).toEqual([
      `present _acme-challenge.www.example.com. ${v} zone=example.com name=_acme-challenge.www fqdn=_acme-challenge.www.example.com ttl=60 value=${v}`,
      `cleanup _acme-challenge.www.example.com. ${v} zone=example.com name=_acme-challenge.www fqdn=_acme-challenge.www.example.com ttl=60 value=${v}`,
    ]);
  });

  it('a non-zero exit fails the update, quoting the end of stderr', async () => {
    const hook = script('fails.sh', 'echo "api said: zone locked" >&2; exit 3');
    const failing = new ExecProvider({ command: hook }).appendTxt(record);
    await expect(failing).rejects.toMatchObject({ code: CertificatesErrorCode.DNS_UPDATE_REFUSED });
    await expect(failing).rejects.toThrow(
      `exec: ${hook} present _acme-challenge.www.example.com. exited with status 3: api said: zone locked`,
    );
  });

  it('a program that hangs is killed at the timeout; a missing one says so', async () => {
    const hook = script('hangs.sh', 'exec sleep 30');
    const started = Date.now();
    await expect(new ExecProvider({ command: hook, timeoutMs: 300 }).appendTxt(record)).rejects.toThrow(
      'did not finish within 0.3 s (killed)',
    );
    expect(Date.now() - started).toBeLessThan(5_000);
    await expect(new ExecProvider({ command: path.join(dir, 'absent.sh') }).appendTxt(record)).rejects.toThrow(
      'could not run: ENOENT',
    );
  });

  it('a script calling nsupdate publishes a record BIND serves, found through the solver and removed again', async () => {
    const keyFile = path.join(dir, 'tsig.key');
    writeFileSync(
      keyFile,
      `key "${bind.key.name}" { algorithm ${bind.key.algorithm}; secret "${bind.key.secret}"; };\n`,
    );
    const op = (verb: string) =>
      `printf 'server 127.0.0.1 ${bind.port}\\nzone %s\\nupdate ${verb} %s 60 TXT "%s"\\nsend\\n' "$PROXYD_DNS_ZONE" "$2" "$3" | nsupdate -k ${keyFile}`;
    const hook = script('nsupdate.sh', `case "$1" in present) ${op('add')} ;; cleanup) ${op('delete')} ;; esac`);
    const solver = new Dns01Solver({
      provider: new ExecProvider({ command: hook }),
      resolvers: [bind.address],
      authoritativePort: bind.port,
      propagationIntervalMs: 50,
    });
    const challenge = {
      type: 'dns-01',
      identifier: 'www.example.com',
      wildcard: false,
      token: 't',
      keyAuthorization: 'y'.repeat(43),
    } as const;
    await solver.present(challenge);
    expect(bind.dig('_acme-challenge.www.example.com', 'TXT')).toBe(`"${'y'.repeat(43)}"`);
    await solver.cleanUp(challenge);
    expect(bind.dig('_acme-challenge.www.example.com', 'TXT')).toBe('');
    const failing = new Dns01Solver({
      provider: new ExecProvider({ command: script('no.sh', 'exit 1') }),
      resolvers: [bind.address],
    });
    expect(dnsStepOf(await failing.present(challenge).catch((e: unknown) => e))).toBe('update-refused');
  });
});
