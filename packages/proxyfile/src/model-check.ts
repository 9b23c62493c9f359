import { Config } from '@proxyd/model';
import type { TLocalizedValidationError } from 'typebox/error';
// typebox/schema's validator (the engine typebox/compile's wraps): typebox/compile also loads
// typebox/value's ~300 modules for methods this check does not call (issue 32).
import { Compile } from 'typebox/schema';
import { type Position, ProxyfileError, ProxyfileErrorCode } from './errors.js';
import { positionOf, quoteText } from './lexer.js';
import type { Document } from './parser.js';

/**
 * The most telling error of the flat list TypeBox reports: the one deepest in
 * the value (inside a union, a variant's own error rather than the union's
 * "must match a schema in anyOf"); the first of equals.
 */
function specific(errors: readonly TLocalizedValidationError[]): TLocalizedValidationError | undefined {
  let best: TLocalizedValidationError | undefined;
  for (const error of errors) {
    if (best === undefined || error.instancePath.length > best.instancePath.length) best = error;
  }
  return best;
}

/**
 * Checks a compiled model against proxy-core's `Config` schema, the contract
 * every consumer trusts. The directives reject bad values with positions of
 * their own; this is the backstop that keeps a value they let through (a
 * compiler gap) from ever reaching the data plane. The error names the site
 * block (its first address and position) and the schema path.
 *
 * The checker is compiled for each call and not kept: a daemon checks at
 * start and at each reload, and a kept checker (~130 KB of generated code
 * with its closures) stayed in an idle primary for good (issue 32).
 */
export function checkModel(config: Config, doc: Document): void {
  const checker = Compile(Config);
  if (checker.Check(config)) return;
  const first = specific(checker.Errors(config)[1]);
  const path = first?.instancePath ?? '';
  const why = first ? `${path}: ${first.message}` : 'the model does not validate';
  const site = /^\/sites\/(\d+)(?:\/|$)/.exec(path);
  const block = site ? doc.sites[Number(site[1])] : undefined;
  const key = block?.keys[0];
  let where: Position;
  let what: string;
  if (key !== undefined) {
    where = positionOf(key);
    what = `site ${quoteText(block?.keys.map((k) => k.text).join(' ') ?? key.text)}`;
  } else if (doc.global !== null) {
    where = positionOf(doc.global.open);
    what = 'the global options block';
  } else {
    where = { file: doc.file, line: 1, column: 1 };
    what = 'the configuration';
  }
  throw new ProxyfileError(
    ProxyfileErrorCode.INVALID_VALUE,
    where,
    `${what} compiles to a value proxy-core's config schema rejects (${why}); this is a gap in the Proxyfile checks, please report it`,
  );
}
