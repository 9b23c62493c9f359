import type { Redirect } from '@proxyd/model';
import type { Dispenser } from '../dispenser.js';
import { ProxyfileErrorCode } from '../errors.js';
import { show, type Token } from '../lexer.js';
import { readMatcherRef } from '../matchers.js';
import { checkPathPattern } from '../path-pattern.js';
import { checkPlaceholders } from '../placeholders.js';
import type { Directive } from './directive.js';

const STATUSES: Record<string, Redirect['status']> = {
  '301': 301,
  '302': 302,
  '303': 303,
  '307': 307,
  '308': 308,
  permanent: 301,
  temporary: 302,
};

function looksLikeStatus(t: Token): boolean {
  return /^\d+$/.test(t.text) || t.text in STATUSES;
}

function readStatus(d: Dispenser, t: Token): Redirect['status'] {
  const status = Object.hasOwn(STATUSES, t.text) ? STATUSES[t.text] : undefined;
  if (status === undefined) {
    throw d.error(
      t,
      ProxyfileErrorCode.INVALID_REDIRECT_STATUS,
      `unsupported redirect status ${show(t)}: expected 301, 302, 303, 307 or 308 (or permanent / temporary)`,
    );
  }
  return status;
}

/**
 * ```
 * redir <from> <to> <status>
 * redir <from> <to>          # 302
 * redir <to> [<status>]      # every path
 * redir @name <to> [<status>]
 * ```
 * `<from>` is a path pattern (`/old`, `/old/*`); `<to>` a path or URL that
 * may hold `{http.request.uri.path.remainder}` (what `*` matched) and the
 * request placeholders (`{uri}`, `{host}`, `{path}`, `{query}`,
 * `{remote_host}`); status
 * 301, 302 (default), 303, 307, 308, or `permanent` (301) / `temporary` (302).
 */
export const redir: Directive = {
  name: 'redir',
  scope: 'any',
  once: false,
  parse(d, state) {
    const matcher = readMatcherRef(d, state.matchers);
    const args = d.remainingArgs();
    d.noBlock();
    if (args.length === 0) throw d.missing('a target: redir [<from>|@name] <to> [<status>]');
    const most = matcher === null ? 3 : 2;
    if (args.length > most) {
      throw d.unexpected(
        args[most] as Token,
        `the end of the line (redir ${matcher === null ? '[<from>]' : `@${matcher}`} <to> [<status>])`,
      );
    }
    let from: Token | null = null;
    let to: Token;
    let status: Redirect['status'] = 302;
    if (matcher !== null) {
      to = args[0] as Token;
      if (args.length === 2) status = readStatus(d, args[1] as Token);
    } else if (args.length === 3) {
      [from, to] = args as [Token, Token];
      status = readStatus(d, args[2] as Token);
    } else if (args.length === 2 && looksLikeStatus(args[1] as Token)) {
      to = args[0] as Token;
      status = readStatus(d, args[1] as Token);
    } else if (args.length === 2) {
      [from, to] = args as [Token, Token];
    } else to = args[0] as Token;
    if (from !== null) checkPathPattern(d, from);
    checkPlaceholders(to, 'redirect target', true);
    if (to.text === '') throw d.unexpected(to, 'a redirect target (a path or URL)', ProxyfileErrorCode.INVALID_VALUE);
    state.target.redirects.push({
      from: from?.text ?? null,
      to: to.text,
      status,
      ...(matcher === null ? {} : { matcher }),
    });
  },
};
