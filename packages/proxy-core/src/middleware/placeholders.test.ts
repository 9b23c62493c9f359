import type { IncomingMessage } from 'node:http';
import { emptySite } from '@proxyd/model';
import { describe, expect, it } from 'vitest';
import type { RequestContext } from '../hooks.js';
import { PathPattern } from './path-pattern.js';
import { Template } from './placeholders.js';

const req = { url: '/a%20b/c?x=1&y', headers: {}, socket: { remoteAddress: '::ffff:192.0.2.7' } } as IncomingMessage;
const ctx: RequestContext = {
  domain: 'a.test',
  host: 'a.test',
  path: '/a%20b/c',
  clientIp: '203.0.113.1',
  secure: true,
  site: emptySite([{ scheme: null, host: 'a.test', port: null }]),
};

describe('Template (request placeholders)', () => {
  it('is null for a value without a placeholder: the caller keeps its fixed string', () => {
    expect(Template.of('plain')).toBeNull();
    expect(Template.of('{"ok":true}')).toBeNull();
    expect(Template.of('{unknown}')).toBeNull();
    expect(Template.of('{http.request.uri.path.remainder}')).toBeNull();
  });

  it('fills the short and the long forms', () => {
    const t = Template.of('{host}|{path}|{query}|{uri}|{remote_host}') as Template;
    expect(t.render(req, ctx)).toBe('a.test|/a%20b/c|x=1&y|/a%20b/c?x=1&y|192.0.2.7');
    const long = Template.of(
      '{http.request.host}|{http.request.uri.path}|{http.request.uri.query}|{http.request.uri}|{http.request.remote.host}',
    ) as Template;
    expect(long.render(req, ctx)).toBe(t.render(req, ctx));
  });

  it('keeps other braces as written, and fills the remainder for redir', () => {
    const t = Template.of('{x} {host} {"a":1} {http.request.uri.path.remainder}', true) as Template;
    expect(t.render(req, ctx, new PathPattern('/a%20b/*'))).toBe('{x} a.test {"a":1} c');
  });

  it('without a query, {query} is empty and {uri} is the path', () => {
    const bare = { ...req, url: '/p' } as IncomingMessage;
    expect((Template.of('{uri}|{query}') as Template).render(bare, { ...ctx, path: '/p' })).toBe('/p|');
  });
});
