import { ProxyfileError, ProxyfileErrorCode } from '@proxyd/proxyfile';
import { describe, expect, it } from 'vitest';
import { EXIT_USAGE, errorLine, exitCodeOf, PRIVILEGED_PORT_HINT, UsageError } from './errors.js';

/** An error as Node's net module raises it for a refused bind. */
function listenError(code: string, address: string, port: number): NodeJS.ErrnoException & { port: number } {
  return Object.assign(new Error(`listen ${code}: permission denied ${address}:${port}`), {
    code,
    syscall: 'listen',
    address,
    port,
  });
}

describe('errorLine: one line per error, never a stack', () => {
  it('prefixes proxyd: and joins a multi-line message with "; "', () => {
    const line = errorLine(new Error('first\n  second\n\nthird'));
    expect(line).toBe('proxyd: first; second; third');
    expect(line).not.toContain('\n');
    expect(errorLine('a string')).toBe('proxyd: a string');
    expect(errorLine(new Error('proxyd: already prefixed'))).toBe('proxyd: already prefixed');
  });

  it('prints a Proxyfile error as the compiler does, file:line:column first', () => {
    const err = new ProxyfileError(ProxyfileErrorCode.UNKNOWN_DIRECTIVE, { file: 'P', line: 2, column: 3 }, 'nope');
    expect(errorLine(err)).toBe('P:2:3: nope');
  });

  it.each([
    ['0.0.0.0', 80, 'cannot listen on 0.0.0.0:80'],
    ['::', 443, 'cannot listen on [::]:443'],
    ['127.0.0.1', 1023, 'cannot listen on 127.0.0.1:1023'],
  ])('a listen EACCES on %s:%i says how to get the privilege', (address, port, where) => {
    const line = errorLine(listenError('EACCES', address, port));
    expect(line).toBe(`proxyd: ${where}: permission denied; ${PRIVILEGED_PORT_HINT}`);
    for (const way of ['setcap cap_net_bind_service=+ep', 'as root', 'AmbientCapabilities', 'http_port/https_port'])
      expect(line).toContain(way);
  });

  it('reads the port from the message when the error crossed a process boundary without its fields', () => {
    expect(errorLine(new Error('worker 0: listen EACCES: permission denied 0.0.0.0:80'))).toContain(
      'cannot listen on 0.0.0.0:80: permission denied; ports below 1024',
    );
  });

  it('gives no privilege hint for a port from 1024, or for another error on a low port', () => {
    expect(errorLine(listenError('EACCES', '0.0.0.0', 8080))).toBe(
      'proxyd: listen EACCES: permission denied 0.0.0.0:8080',
    );
    expect(errorLine(listenError('EADDRINUSE', '0.0.0.0', 80))).not.toContain('setcap');
  });
});

describe('exitCodeOf', () => {
  it('is 2 for a usage error, an error’s own exitCode when positive, else 1', () => {
    expect(exitCodeOf(new UsageError('bad flag'))).toBe(EXIT_USAGE);
    expect(exitCodeOf(Object.assign(new Error('x'), { exitCode: 3 }))).toBe(3);
    expect(exitCodeOf(Object.assign(new Error('x'), { exitCode: 0 }))).toBe(1);
    expect(exitCodeOf(new Error('runtime'))).toBe(1);
    expect(exitCodeOf(undefined)).toBe(1);
  });
});
