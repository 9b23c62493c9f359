import { PLACEHOLDER_PATTERN, REMAINDER_PLACEHOLDER, REQUEST_PLACEHOLDERS, requestPlaceholder } from '@proxyd/model';
import { type Position, ProxyfileError, ProxyfileErrorCode } from './errors.js';
import { positionOf, quoteText, type Token, width } from './lexer.js';
import { nearest } from './suggest.js';

/** The short forms, as the README lists them. */
const SHORT_FORMS = [
  ...Object.keys(REQUEST_PLACEHOLDERS).filter((k) => !k.startsWith('{http.')),
  '{header.<Field>}',
  '{query.<key>}',
  '{re.<name>.<group>}',
];

/** Where a part of a token's text starts: exact for a token written on one line, else the token. */
function positionIn(t: Token, index: number): Position {
  const at = positionOf(t);
  if (t.source !== undefined || t.endLine !== t.line) return at;
  if (!t.quoted) return { ...at, column: t.column + width(t.text.slice(0, index)) };
  // A quoted token: exact when no escape shifted the text (raw is the text between its quotes).
  if (t.raw.slice(1, -1) !== t.text) return at;
  return { ...at, column: t.column + 1 + width(t.text.slice(0, index)) };
}

/**
 * Checks the `{…}` placeholders of a value resolved per request (`redir`
 * target, `header`/`header_up` value, `respond` body): each must be a
 * request placeholder (`{uri}`, `{host}`, `{path}`, `{query}`,
 * `{remote_host}`, `{client_ip}`, `{header.*}`, `{query.*}`, `{re.*}` or
 * Caddy's long form), or, where `remainder` is true,
 * `{http.request.uri.path.remainder}`. An unknown one is
 * `PROXYFILE_INVALID_VALUE` at the placeholder, naming the nearest known
 * one. Braces that do not form a name (`{"a":1}`) are text.
 */
export function checkPlaceholders(t: Token, where: string, remainder = false): void {
  if (t.text.indexOf('{') < 0) return;
  for (const m of t.text.matchAll(PLACEHOLDER_PATTERN)) {
    const name = m[0];
    if (requestPlaceholder(name) !== null || (remainder && name === REMAINDER_PLACEHOLDER)) continue;
    const known = remainder ? [...SHORT_FORMS, REMAINDER_PLACEHOLDER] : SHORT_FORMS;
    const near = nearest(name, [...Object.keys(REQUEST_PLACEHOLDERS), ...(remainder ? [REMAINDER_PLACEHOLDER] : [])]);
    const hint =
      name === REMAINDER_PLACEHOLDER
        ? ` (${REMAINDER_PLACEHOLDER} is what a redir's <from> pattern matched: redir only)`
        : near
          ? ` (did you mean ${near}?)`
          : '';
    throw new ProxyfileError(
      ProxyfileErrorCode.INVALID_VALUE,
      positionIn(t, m.index ?? 0),
      `unknown placeholder ${quoteText(name)} in ${where}${hint}: known are ${known.join(', ')} (or Caddy's long forms, e.g. {http.request.host})`,
    );
  }
}
