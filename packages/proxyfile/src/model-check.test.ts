import { describe, expect, it } from 'vitest';
import { ProxyfileError, ProxyfileErrorCode } from './errors.js';
import { checkModel } from './model-check.js';
import { parse } from './parse.js';
import { parseDocument } from './parser.js';

describe('checkModel (the compiled model against proxy-core’s Config schema)', () => {
  const text = 'a.test {\n\trespond\n}\n\nb.test, c.test {\n\troot * /srv\n\tfile_server\n}\n';

  it('passes a compiled model', () => {
    expect(() => checkModel(parse(text), parseDocument(text))).not.toThrow();
  });

  it('names the site block, its position and the schema path when a value slips through', () => {
    const config = parse(text);
    const handler = config.sites[1]?.handler;
    if (handler?.kind !== 'file_server') throw new Error('expected a file_server');
    handler.root = '';
    try {
      checkModel(config, parseDocument(text));
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ProxyfileError);
      const e = err as ProxyfileError;
      expect(e.code).toBe(ProxyfileErrorCode.INVALID_VALUE);
      expect(e.position).toEqual({ file: 'Proxyfile', line: 5, column: 1 });
      expect(e.message).toMatch(
        /^Proxyfile:5:1: site "b\.test, c\.test" compiles to a value proxy-core's config schema rejects \(\/sites\/1\/handler\/root: /,
      );
    }
  });

  it('points at the global block for a bad global option', () => {
    const withGlobal = `{\n\temail a@b.test\n}\n${text}`;
    const config = parse(withGlobal);
    config.global.http_port = 0;
    expect(() => checkModel(config, parseDocument(withGlobal))).toThrow(
      /^Proxyfile:1:1: the global options block compiles to a value .*\/global\/http_port/,
    );
  });
});
