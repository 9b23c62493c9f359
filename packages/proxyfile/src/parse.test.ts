import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProxyfileError, ProxyfileErrorCode, parse, summarize } from './index.js';

describe('parse', () => {
  it('resolves imports relative to the importing file with synchronous fs by default', () => {
    const dir = mkdtempSync(join(tmpdir(), 'proxyfile-'));
    mkdirSync(join(dir, 'sites'));
    writeFileSync(join(dir, 'sites', 'a.conf'), 'a.test {\n\timport ../common.conf\n}\n');
    writeFileSync(join(dir, 'common.conf'), 'reverse_proxy 127.0.0.1:9000\n');
    const config = parse('import sites/*.conf\n', { filename: join(dir, 'Proxyfile') });
    expect(config.sites[0]?.handler).toMatchObject({
      kind: 'reverse_proxy',
      upstreams: [{ host: '127.0.0.1', port: 9000 }],
    });
  });

  it('reads {$VAR} from process.env unless env is given', () => {
    process.env.PROXYFILE_TEST_HOST = 'fromenv.test';
    expect(parse('{$PROXYFILE_TEST_HOST} {\n\trespond\n}\n').sites[0]?.addresses[0]?.host).toBe('fromenv.test');
    expect(parse('{$PROXYFILE_TEST_HOST:x.test} {\n\trespond\n}\n', { env: {} }).sites[0]?.addresses[0]?.host).toBe(
      'x.test',
    );
  });

  it('keeps the walking-skeleton contract: reverse_proxy nope fails at 2:16', () => {
    try {
      parse('a.test {\n\treverse_proxy nope\n}\n');
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ProxyfileError);
      const e = err as ProxyfileError;
      expect([e.position.line, e.position.column, e.code]).toEqual([2, 16, ProxyfileErrorCode.INVALID_UPSTREAM]);
      expect(e.message).toBe('Proxyfile:2:16: unexpected "nope", expected an upstream address (host:port)');
    }
  });

  it('summarizes sites and distinct upstreams', () => {
    const config = parse(
      'a.test {\n\treverse_proxy 127.0.0.1:1 127.0.0.1:2\n}\nb.test {\n\thandle /x {\n\t\treverse_proxy 127.0.0.1:2 127.0.0.1:3\n\t}\n\trespond\n}\n',
    );
    expect(summarize(config)).toEqual({ sites: 2, upstreams: 3 });
  });

  it('pathological input (deep nesting, huge tokens, brace floods) fails with ProxyfileError, quickly', () => {
    const inputs = [
      `a.test {\n${'x {\n'.repeat(100_000)}${'}\n'.repeat(100_001)}`,
      `${'a'.repeat(5_000_000)} {\n}\n`,
      '{\n'.repeat(100_000),
      '}\n'.repeat(100_000),
      `a.test {\n\trespond "${'x'.repeat(1_000_000)}`,
    ];
    for (const text of inputs) {
      const started = performance.now();
      expect(() => parse(text, { env: {} })).toThrow(ProxyfileError);
      expect(performance.now() - started).toBeLessThan(2000);
    }
  });
});
