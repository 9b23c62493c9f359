import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { AUDIT_TARGET, createLogging, levelFor, parseLogFilter } from './logging.js';

function capture(spec: string | undefined) {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logging: createLogging(spec, sink), lines };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('PROXY_LOG', () => {
  it('parses a default level and per-target levels; the longest target wins', () => {
    const filter = parseLogFilter('warn,proxy::admin=debug,proxy::admin::audit=info');
    expect(filter.level).toBe('warn');
    expect(levelFor(filter, 'proxy::admin::audit')).toBe('info');
    expect(levelFor(filter, 'proxy::admin::audit::x')).toBe('info');
    expect(levelFor(filter, 'proxy::admin')).toBe('debug');
    expect(levelFor(filter, 'proxy::adminx')).toBe('warn');
    expect(levelFor(filter, 'proxy::server')).toBe('warn');
    expect(parseLogFilter(undefined).level).toBe('info');
    expect(parseLogFilter('off').level).toBe('silent');
  });

  it('rejects an unknown level with one line naming the valid ones', () => {
    expect(() => parseLogFilter('loud')).toThrow(
      new Error('PROXY_LOG: unknown level "loud" (expected trace, debug, info, warn, error, fatal or off)'),
    );
    expect(() => parseLogFilter('info,proxy::admin=chatty')).toThrow('PROXY_LOG: unknown level "chatty"');
  });

  it('warn,proxy::admin::audit=info shows audit events and warnings only', async () => {
    const { logging, lines } = capture(`warn,${AUDIT_TARGET}=info`);
    logging.forTarget('proxy::server').info('ready');
    logging.root.info({ target: 'proxy::server' }, 'root info');
    logging.root.info('untargeted info');
    logging.forTarget(AUDIT_TARGET).info({ action: 'route_add', principal: 'admin', resource: 'a.test' }, 'audit');
    logging.root.info({ target: AUDIT_TARGET, action: 'route_delete' }, 'audit via root');
    logging.forTarget('proxy::server').warn('a warning');
    await flush();
    expect(lines.map((l) => [l.target, l.level, l.msg])).toEqual([
      [AUDIT_TARGET, 'info', 'audit'],
      [AUDIT_TARGET, 'info', 'audit via root'],
      ['proxy::server', 'warn', 'a warning'],
    ]);
    expect(lines[0]).toMatchObject({ action: 'route_add', principal: 'admin', resource: 'a.test' });
    expect(typeof lines[0]?.time).toBe('string');
  });

  it('defaults to info for every target', async () => {
    const { logging, lines } = capture(undefined);
    logging.forTarget('a').debug('hidden');
    logging.forTarget('a').info('shown');
    await flush();
    expect(lines.map((l) => l.msg)).toEqual(['shown']);
  });
});
