import { defaultGlobalOptions } from '@proxyd/model';
import { describe, expect, it } from 'vitest';
import { ProxyfileError, ProxyfileErrorCode, parse } from './index.js';

const dockerHost = (host: string) => parse(`{\n\tdocker {\n\t\thost ${host}\n\t}\n}\n`).global.docker.host;

/** The code and detail of the error `parse` throws for `docker { host <host> }`. */
function hostError(host: string): { code: string; detail: string } {
  try {
    dockerHost(host);
  } catch (err) {
    if (err instanceof ProxyfileError) return { code: err.code, detail: err.detail };
    throw err;
  }
  throw new Error(`${host} was accepted`);
}

describe('docker global option', () => {
  it('defaults to discovery on, the runtime and network chosen by the daemon', () => {
    expect(parse('a.test {\n\trespond\n}\n').global.docker).toEqual({ enabled: true, host: null, network: null });
    expect(defaultGlobalOptions().docker).toEqual({ enabled: true, host: null, network: null });
    expect(parse('{\n\tdocker {\n\t}\n}\n').global.docker).toEqual({ enabled: true, host: null, network: null });
  });

  it.each([
    'unix:///var/run/docker.sock',
    'unix:///run/user/1000/podman/podman.sock',
    '"unix:///tmp/with space.sock"',
    `unix:///${'s'.repeat(106)}`,
    'tcp://127.0.0.1:2375',
    'tcp://docker.internal:2376',
    'tcp://socket-proxy:2375',
    'tcp://[::1]:2375',
  ])('accepts host %s, kept as written', (host) => {
    expect(dockerHost(host)).toBe(host.replace(/^"|"$/g, ''));
  });

  it.each([
    ['unix://', 'the socket path must be absolute'],
    ['unix:///', 'names a directory'],
    ['unix:///run/podman/', 'names a directory'],
    [`unix:///${'s'.repeat(107)}`, 'longer than 107 bytes'],
    ['tcp://127.0.0.1', '"127.0.0.1" is not host:port'],
    ['tcp://127.0.0.1:0', 'is not 1-65535'],
    ['tcp://127.0.0.1:2375/', 'no scheme or path'],
    ['tcp://::1:2375', 'outside brackets'],
    ['tcp://', 'is empty'],
    ['https://docker.internal:2376', 'https:// is not supported'],
    ['ssh://user@host', 'ssh:// is not supported'],
    ['npipe:////./pipe/docker_engine', 'npipe:// is not supported'],
    ['127.0.0.1:2375', 'no unix:// or tcp:// scheme'],
    ['docker.sock', 'no unix:// or tcp:// scheme'],
  ])('refuses host %s (%s)', (host, problem) => {
    const { code, detail } = hostError(host);
    expect(code).toBe(ProxyfileErrorCode.INVALID_VALUE);
    expect(detail).toContain('expected a runtime endpoint: unix://<absolute path> or tcp://<host>:<port>');
    expect(detail).toContain(problem);
  });

  it.each([
    ['proxy_net', true],
    ['my-app_default', true],
    ['Net.1', true],
    ['0net', true],
    ['_net', false],
    ['.net', false],
    ['net work', false],
    ['net/work', false],
    ['nét', false],
  ])('network %s: valid %s', (network, valid) => {
    const text = `{\n\tdocker {\n\t\tnetwork ${JSON.stringify(network)}\n\t}\n}\n`;
    if (valid) expect(parse(text).global.docker.network).toBe(network);
    else expect(() => parse(text)).toThrow(/expected a network name/);
  });

  it('takes a {$VAR} host, as any value', () => {
    const text = '{\n\tdocker {\n\t\thost {$RUNTIME}\n\t}\n}\n';
    expect(parse(text, { env: { RUNTIME: 'unix:///run/podman/podman.sock' } }).global.docker.host).toBe(
      'unix:///run/podman/podman.sock',
    );
    expect(() => parse(text, { env: {} })).toThrow(/\{\$RUNTIME\} is not set/);
  });
});

describe('grace_period global option', () => {
  it('defaults to 30 s; takes a duration, 0 included', () => {
    expect(parse('a.test {\n\trespond\n}\n').global.grace_period_ms).toBe(30_000);
    expect(parse('{\n\tgrace_period 10s\n}\n').global.grace_period_ms).toBe(10_000);
    expect(parse('{\n\tgrace_period 1m30s\n}\n').global.grace_period_ms).toBe(90_000);
    expect(parse('{\n\tgrace_period 0\n}\n').global.grace_period_ms).toBe(0);
  });

  it('refuses what is not a duration, and a second argument', () => {
    for (const bad of ['grace_period soon', 'grace_period', 'grace_period 10s 20s']) {
      expect(() => parse(`{\n\t${bad}\n}\n`)).toThrow(ProxyfileError);
    }
    try {
      parse('{\n\tgrace_period soon\n}\n');
    } catch (err) {
      expect((err as ProxyfileError).code).toBe(ProxyfileErrorCode.INVALID_VALUE);
      expect((err as ProxyfileError).detail).toContain('a duration such as 500ms, 10s or 1m');
    }
  });
});
