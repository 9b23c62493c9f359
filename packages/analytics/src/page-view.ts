import type { RequestRecord } from '@proxyd/proxy-core';

/** The reserved path prefix of proxyd's own endpoints (script, beacon, challenge): never a page view. */
const RESERVED_PREFIX = '/_proxyd/';
/** An HTML response's Content-Type (parameters and case aside). */
const HTML = /^\s*(?:text\/html|application\/xhtml\+xml)\s*(?:;|$)/i;

/** Whether a Content-Type value is an HTML document (`text/html`, `application/xhtml+xml`). */
export function isHtml(contentType: string | undefined): boolean {
  return contentType !== undefined && HTML.test(contentType);
}

/**
 * The page-view rule (README, "The page-view rule"): a GET answered 2xx
 * with an HTML content type, for a path outside `/_proxyd/`, from a client
 * that is not a bot. HEAD is not a view (no browser navigates with it;
 * monitors and link checkers do); neither is a 304, which carries no
 * content type to tell a page from an asset.
 */
export function isPageView(record: RequestRecord, bot: boolean): boolean {
  return (
    !bot &&
    record.method === 'GET' &&
    record.status >= 200 &&
    record.status < 300 &&
    isHtml(record.contentType) &&
    !record.path.startsWith(RESERVED_PREFIX)
  );
}

/**
 * The path of a Referer value when it is an absolute http(s) URL of `host`
 * (`https://a.example/docs/x?q=1` → `/docs/x` for `a.example`); null
 * otherwise. For beacons sent without a page path (scripts older than
 * issue 22).
 */
export function sameHostPath(referer: string | undefined, host: string): string | null {
  if (referer === undefined) return null;
  const url = URL.parse(referer);
  if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:')) return null;
  const name = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return name === host ? url.pathname : null;
}
