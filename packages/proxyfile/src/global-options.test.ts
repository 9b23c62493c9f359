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

describe('servers global option (issue 28)', () => {
  const servers = (body: string) => parse(`{\n\tservers {\n${body}\n\t}\n}\n`).global.servers;
  /** The code and detail of the error for a servers block of `body`. */
  function serversError(body: string): { code: string; detail: string } {
    try {
      servers(body);
    } catch (err) {
      if (err instanceof ProxyfileError) return { code: err.code, detail: err.detail };
      throw err;
    }
    throw new Error(`${body} was accepted`);
  }

  it('is absent without the option: every listener keeps its defaults', () => {
    expect(parse('a.test {\n\trespond\n}\n').global.servers).toBeUndefined();
    expect(servers('')).toEqual({});
  });

  it("reads Caddy's timeouts and max_header_size, and proxyd's max_connections_per_ip", () => {
    expect(
      servers(
        '\t\ttimeouts {\n\t\t\tread_header 500ms\n\t\t\tread_body 1m\n\t\t\twrite 0\n\t\t\tidle 1h\n\t\t}\n\t\tmax_header_size 1MB\n\t\tmax_connections_per_ip 10',
      ),
    ).toEqual({
      read_header_ms: 500,
      read_body_ms: 60_000,
      write_ms: 0,
      idle_ms: 3_600_000,
      max_header_size_bytes: 1_000_000,
      max_connections_per_ip: 10,
    });
    expect(servers('\t\tmax_header_size 16KiB')).toEqual({ max_header_size_bytes: 16_384 });
  });

  it('allows 0 (none) for read_body and write only: without a head or idle timeout a silent connection stays forever', () => {
    expect(servers('\t\ttimeouts {\n\t\t\tread_body 0\n\t\t}')).toEqual({ read_body_ms: 0 });
    for (const option of ['read_header', 'idle']) {
      const { code, detail } = serversError(`\t\ttimeouts {\n\t\t\t${option} 0\n\t\t}`);
      expect(code).toBe(ProxyfileErrorCode.INVALID_VALUE);
      expect(detail).toContain('more than 0');
    }
    expect(serversError('\t\ttimeouts {\n\t\t\tidle 25h\n\t\t}').detail).toContain('at most 24h');
  });

  it('refuses bad values, unknown and repeated options, with what it expected', () => {
    const cases: Array<[string, string, string]> = [
      ['\t\tmax_connections_per_ip ten', ProxyfileErrorCode.INVALID_VALUE, 'a number of connections'],
      ['\t\tmax_connections_per_ip 1.5', ProxyfileErrorCode.INVALID_VALUE, 'a number of connections'],
      ['\t\tmax_connections_per_ip 1000001', ProxyfileErrorCode.INVALID_VALUE, 'to 1000000'],
      ['\t\tmax_header_size 17MiB', ProxyfileErrorCode.INVALID_VALUE, 'at most 16MiB'],
      ['\t\tmax_header_size 1023', ProxyfileErrorCode.INVALID_VALUE, 'at least 1KiB'],
      ['\t\ttimeouts 1m', ProxyfileErrorCode.UNEXPECTED_TOKEN, 'the end of the line'],
      ['\t\ttimeouts {\n\t\t\tread_header soon\n\t\t}', ProxyfileErrorCode.INVALID_VALUE, 'a duration'],
      [
        '\t\ttimeouts {\n\t\t\tread 1m\n\t\t}',
        ProxyfileErrorCode.UNKNOWN_DIRECTIVE,
        'read_body, read_header, write, idle',
      ],
      [
        '\t\ttimeouts {\n\t\t\tidle 1m\n\t\t\tidle 2m\n\t\t}',
        ProxyfileErrorCode.DUPLICATE_DIRECTIVE,
        '"idle" is already set',
      ],
      ['\t\tmax_connections_per_ip 1\n\t\tmax_connections_per_ip 2', ProxyfileErrorCode.DUPLICATE_DIRECTIVE, 'already'],
      ['\t\tprotocols h1 h2', ProxyfileErrorCode.UNKNOWN_DIRECTIVE, 'a servers option'],
    ];
    for (const [body, code, detail] of cases) {
      const error = serversError(body);
      expect(error.code, body).toBe(code);
      expect(error.detail, body).toContain(detail);
    }
  });

  it('is one block for every listener: a listener address and a second block are refused', () => {
    expect(() => parse('{\n\tservers :443 {\n\t}\n}\n')).toThrow(/no listener address/);
    expect(() => parse('{\n\tservers {\n\t}\n\tservers {\n\t}\n}\n')).toThrow(/global option "servers" is already set/);
  });
});
