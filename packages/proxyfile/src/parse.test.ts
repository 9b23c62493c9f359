import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
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

  it('catches a file that imports itself at the first import, however the path is spelled', () => {
    const read: string[] = [];
    const readFile = (p: string) => {
      read.push(p);
      return 'import x.pf\n';
    };
    expect(() => parse('import x.pf\n', { filename: './x.pf', readFile })).toThrow(
      './x.pf:1:8: import cycle: ./x.pf -> x.pf',
    );
    expect(read).toEqual([]);
    // Relative main file, absolute import of the same file.
    const dir = mkdtempSync(join(tmpdir(), 'proxyfile-self-'));
    const main = join(dir, 'main.pf');
    writeFileSync(main, `import ${main}\n`);
    const relativeName = relative(process.cwd(), main);
    expect(() => parse(`import ${main}\n`, { filename: relativeName })).toThrow(
      `${relativeName}:1:8: import cycle: ${relativeName} -> ${main}`,
    );
  });

  it('keeps a dropped {$VAR} to explain the missing argument, and a snippet keeps it too', () => {
    const text = '(up) {\n\treverse_proxy {$UP}\n}\na.test {\n\timport up\n}\n';
    expect(() => parse(text, { env: {} })).toThrow(
      'Proxyfile:2:16: {$UP} is not set (empty), expected an upstream address',
    );
    expect(parse(text, { env: { UP: '127.0.0.1:9' } }).sites[0]?.handler).toMatchObject({ upstreams: [{ port: 9 }] });
    // An optional argument that comes out empty simply disappears, as in Caddy.
    expect(parse('a.test {\n\treverse_proxy 127.0.0.1:1 {$EXTRA}\n}\n', { env: {} }).sites[0]?.handler).toMatchObject({
      upstreams: [{ port: 1 }],
    });
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
