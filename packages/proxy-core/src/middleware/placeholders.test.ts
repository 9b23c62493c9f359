import type { IncomingMessage } from 'node:http';
import { emptySite } from '@proxyd/model';
import { describe, expect, it } from 'vitest';
import type { RequestContext } from '../hooks.js';
import { PathPattern } from './path-pattern.js';
import { Template } from './placeholders.js';
import { RequestMatch } from './request-matcher.js';

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

describe('Template: placeholders of issue 34', () => {
  it('fills {client_ip}, {header.*} and {query.*}, short and long forms; absent ones are empty', () => {
    const r = {
      url: '/p?q=a%20b&q=2&empty=',
      headers: { 'x-flag': 'on', 'x-list': ['a', 'b'] },
      socket: { remoteAddress: '127.0.0.1' },
    } as unknown as IncomingMessage;
    const t = Template.of(
      '{client_ip}|{header.X-Flag}|{header.X-List}|{query.q}|{query.empty}|{query.none}|{header.None}',
    );
    expect(t?.render(r, ctx)).toBe('203.0.113.1|on|a, b|a b|||');
    const long = Template.of(
      '{http.vars.client_ip}|{http.request.header.x-flag}|{http.request.header.X-List}|{http.request.uri.query.q}|{http.request.uri.query.empty}|{http.request.uri.query.none}|{http.request.header.None}',
    );
    expect(long?.render(r, ctx)).toBe(t?.render(r, ctx));
  });

  it('fills {re.<name>.<group>} from the regexp matchers that matched the request, else empty', () => {
    const r = { url: '/users/42', headers: {}, socket: { remoteAddress: '127.0.0.1' } } as unknown as IncomingMessage;
    const m = new RequestMatch(
      { path: null, method: null, header: [], path_regexp: { name: '', pattern: '^/users/(?<id>\\d+)$' } },
      'user',
    );
    const c = { ...ctx, path: '/users/42' };
    const t = Template.of('{re.user.1}|{re.user.id}|{re.1}|{http.regexp.user.id}|{re.other.1}|{re.user.9}') as Template;
    expect(t.render(r, c)).toBe('|||||');
    expect(m.matches(r, c)).toBe(true);
    expect(t.render(r, c)).toBe('42|42|42|42||');
  });
});
