import { Config } from '@proxyd/proxy-core/model';
import { type TypeCheck, TypeCompiler } from '@sinclair/typebox/compiler';
import type { ValueError } from '@sinclair/typebox/errors';
import { type Position, ProxyfileError, ProxyfileErrorCode } from './errors.js';
import { positionOf, quoteText } from './lexer.js';
import type { Document } from './parser.js';

let checker: TypeCheck<typeof Config> | null = null;

/** The most telling error: inside a union, the first error of the variant that fails least. */
function specific(error: ValueError): ValueError {
  let best: ValueError[] | null = null;
  for (const variant of error.errors) {
    const list = [...variant];
    if (list.length > 0 && (best === null || list.length < best.length)) best = list;
  }
  const first = best?.[0];
  return first === undefined ? error : specific(first);
}

/**
 * Checks a compiled model against proxy-core's `Config` schema, the contract
 * every consumer trusts. The directives reject bad values with positions of
 * their own; this is the backstop that keeps a value they let through (a
 * compiler gap) from ever reaching the data plane. The error names the site
 * block (its first address and position) and the schema path.
 */
export function checkModel(config: Config, doc: Document): void {
  checker ??= TypeCompiler.Compile(Config);
  if (checker.Check(config)) return;
  const found = checker.Errors(config).First();
  const first = found === undefined ? undefined : specific(found);
  const path = first?.path ?? '';
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
