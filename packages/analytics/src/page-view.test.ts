import type { RequestRecord } from '@proxyd/proxy-core';
import { describe, expect, it } from 'vitest';
import { isHtml, isPageView, sameHostPath } from './page-view.js';

function rec(over: Partial<RequestRecord> = {}): RequestRecord {
  return {
    host: 'shop.example',
    domain: 'shop.example',
    analytics: true,
    method: 'GET',
    path: '/',
    status: 200,
    bytesSent: 100,
    durationMs: 1,
    clientIp: '203.0.113.7',
    referer: undefined,
    userAgent: 'Mozilla/5.0',
    contentType: 'text/html; charset=utf-8',
    startedAt: 0,
    ...over,
  };
}

describe('isHtml', () => {
  it('is text/html or application/xhtml+xml, any case, with or without parameters', () => {
    for (const t of ['text/html', 'TEXT/HTML; charset=UTF-8', ' text/html ;q=1', 'application/xhtml+xml']) {
      expect(isHtml(t)).toBe(true);
    }
    for (const t of [undefined, '', 'text/plain', 'text/htmlx', 'application/json', 'text/css', 'image/svg+xml']) {
      expect(isHtml(t)).toBe(false);
    }
  });
});

describe('isPageView', () => {
  it('a GET answered 2xx with HTML, outside /_proxyd/, by a person', () => {
    expect(isPageView(rec(), false)).toBe(true);
    expect(isPageView(rec({ status: 203 }), false)).toBe(true);
  });

  it.each([
    ['a bot', rec(), true],
    ['HEAD', rec({ method: 'HEAD' }), false],
    ['POST', rec({ method: 'POST' }), false],
    ['a 304 revalidation', rec({ status: 304, contentType: undefined }), false],
    ['a redirect', rec({ status: 301 }), false],
    ['a 404 page', rec({ status: 404 }), false],
    ['a 500 page', rec({ status: 500 }), false],
    ['a client gone before headers', rec({ status: 0 }), false],
    ['a stylesheet', rec({ path: '/app.css', contentType: 'text/css' }), false],
    ['an image', rec({ path: '/logo.png', contentType: 'image/png' }), false],
    ['JSON', rec({ path: '/api', contentType: 'application/json' }), false],
    ['no content type', rec({ contentType: undefined }), false],
    ['the analytics script', rec({ path: '/_proxyd/a.js' }), false],
    ['the challenge page', rec({ path: '/_proxyd/challenge', status: 200 }), false],
  ] as const)('not %s', (_name, record, bot) => {
    expect(isPageView(record, bot)).toBe(false);
  });
});

describe('sameHostPath', () => {
  it('the path of an http(s) Referer of the same host, query and fragment left out', () => {
    expect(sameHostPath('https://shop.example/docs/a?x=1#top', 'shop.example')).toBe('/docs/a');
    expect(sameHostPath('http://SHOP.example:8080', 'shop.example')).toBe('/');
    expect(sameHostPath('https://user@shop.example/x', 'shop.example')).toBe('/x');
    expect(sameHostPath('http://[2001:db8::1]/v6', '2001:db8::1')).toBe('/v6');
  });

  it('null for another host, another scheme, a relative or missing value', () => {
    expect(sameHostPath('https://other.example/docs', 'shop.example')).toBeNull();
    expect(sameHostPath('https://shop.example.evil/docs', 'shop.example')).toBeNull();
    expect(sameHostPath('ftp://shop.example/docs', 'shop.example')).toBeNull();
    expect(sameHostPath('/docs', 'shop.example')).toBeNull();
    expect(sameHostPath(undefined, 'shop.example')).toBeNull();
  });
});
