import type { UriOp } from '@proxyd/model';
import { ProxyfileErrorCode } from '../errors.js';
import type { Token } from '../lexer.js';
import { nearest } from '../suggest.js';
import type { Directive } from './directive.js';
import { readScope } from './rewrite.js';

const OPS = ['strip_prefix', 'strip_suffix', 'replace', 'path_regexp'] as const;
/** Caddy's query operations: named in the message, not supported. */
const CADDY_OPS = new Set(['query']);

/**
 * ```
 * uri [<path>|*|@name] strip_prefix <prefix>
 * uri [<path>|*|@name] strip_suffix <suffix>
 * uri [<path>|*|@name] replace <find> <replace> [<limit>]
 * uri [<path>|*|@name] path_regexp <regexp> <replace>
 * ```
 * Edits the request's path (the query is kept): every matching `uri` line
 * of a block applies, in file order, after its `rewrite`. `strip_prefix`
 * adds a leading `/` to the prefix when it has none; `replace` replaces
 * every occurrence, or the first `<limit>`; `path_regexp` replaces what
 * the regexp matches (`$1` refers to a group).
 */
export const uri: Directive = {
  name: 'uri',
  scope: 'any',
  once: false,
  parse(d, state) {
    const scope = readScope(d, state, (t) => t.text.startsWith('/') || t.text.startsWith('*'));
    const opToken = d.arg(`an operation: ${OPS.join(', ')}`);
    const op = opToken.text as UriOp['op'];
    if (!(OPS as readonly string[]).includes(op)) {
      if (CADDY_OPS.has(op)) {
        throw d.error(
          opToken,
          ProxyfileErrorCode.UNKNOWN_DIRECTIVE,
          `uri ${opToken.text} is not supported (Caddy has it; proxyd's uri edits the path: ${OPS.join(', ')}); rewrite sets a query`,
        );
      }
      const near = nearest(op, OPS);
      throw d.unexpected(
        opToken,
        `a uri operation${near ? ` (did you mean "${near}"?)` : ''}: ${OPS.join(', ')}`,
        ProxyfileErrorCode.UNKNOWN_DIRECTIVE,
      );
    }
    const find = d.nonEmptyArg(
      op === 'path_regexp' ? 'a regular expression' : `the text to ${op === 'replace' ? 'find' : 'strip'}`,
    );
    let replace = '';
    let limit = 0;
    if (op === 'replace' || op === 'path_regexp') {
      replace = d.arg('the replacement').text;
      if (op === 'replace') {
        const l = d.nextArg();
        if (l !== null) {
          if (!/^(0|[1-9]\d{0,5})$/.test(l.text)) {
            throw d.unexpected(l, 'a replacement limit (a whole number; 0: all)', ProxyfileErrorCode.INVALID_VALUE);
          }
          limit = Number(l.text);
        }
      }
    }
    if (op === 'path_regexp') {
      try {
        new RegExp(find.text);
      } catch (err) {
        throw d.unexpected(
          find,
          `a regular expression (${(err as Error).message.replace(/^Invalid regular expression: /, '')})`,
          ProxyfileErrorCode.INVALID_VALUE,
        );
      }
    }
    const extra = d.peekArg();
    if (extra !== null) throw d.unexpected(extra as Token, `the end of the line (uri ${op} takes no more arguments)`);
    d.noBlock();
    state.target.uri ??= [];
    state.target.uri.push({ ...scope, op, find: find.text, replace, limit });
  },
};
