/** Longest host kept (RFC 1035). */
const MAX_HOST = 253;

/**
 * The lowercase host of a Referer header value (`https://a.example:8443/x`
 * → `a.example`), without userinfo or port; null when the value is not an
 * absolute http(s) URL. No URL object is built (hot path).
 */
export function referrerHost(referer: string | undefined): string | null {
  if (referer === undefined) return null;
  const scheme = referer.indexOf('://');
  if (scheme < 4 || scheme > 5) return null;
  const proto = referer.slice(0, scheme).toLowerCase();
  if (proto !== 'http' && proto !== 'https') return null;
  let start = scheme + 3;
  let end = referer.length;
  for (let i = start; i < referer.length; i++) {
    const c = referer.charCodeAt(i);
    if (c === 47 /* / */ || c === 63 /* ? */ || c === 35 /* # */) {
      end = i;
      break;
    }
  }
  const at = referer.lastIndexOf('@', end);
  if (at >= start) start = at + 1;
  let host: string;
  if (referer.charCodeAt(start) === 91 /* [ */) {
    const close = referer.indexOf(']', start);
    if (close < 0 || close > end) return null;
    host = referer.slice(start + 1, close);
  } else {
    const colon = referer.indexOf(':', start);
    host = referer.slice(start, colon >= 0 && colon < end ? colon : end);
  }
  if (host.length === 0 || host.length > MAX_HOST) return null;
  return host.toLowerCase();
}
