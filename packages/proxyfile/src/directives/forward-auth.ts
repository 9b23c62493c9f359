import type { CopyHeader, UpstreamAddress } from '@proxyd/model';
import type { Dispenser } from '../dispenser.js';
import { ProxyfileErrorCode } from '../errors.js';
import type { Token } from '../lexer.js';
import { readMatcherToken } from '../matchers.js';
import { checkPlaceholders } from '../placeholders.js';
import { nearest } from '../suggest.js';
import { checkHeaderName, parseUpstream } from '../values.js';
import type { Directive } from './directive.js';

const OPTIONS = ['uri', 'copy_headers', 'to'];

/**
 * ```
 * forward_auth [@name] <upstream> {
 *     uri <path>                        # the auth endpoint, e.g. /api/authz/forward-auth
 *     copy_headers <field>... {         # From>To renames
 *         <field>...
 *     }
 * }
 * ```
 * Asks an auth server (Authelia, Authentik, oauth2-proxy) about each
 * request before it is handled: a GET to `<upstream><uri>` with the
 * client's headers and `X-Forwarded-Method`, `-Proto`, `-Host`, `-Uri`,
 * `-For`. A 2xx lets the request through with the `copy_headers` of the
 * answer (removed from the request when the answer lacks them); any other
 * answer goes to the client as it came, a redirect to the login page
 * included. One auth server (`to` may name it instead of the line).
 */
export const forwardAuth: Directive = {
  name: 'forward_auth',
  scope: 'any',
  once: true,
  parse(d, state) {
    const matcher = readMatcherToken(d, state);
    const upstreams: { address: UpstreamAddress; tls: boolean; at: Token }[] = [];
    const add = (sub: Dispenser, t: Token) => {
      if (upstreams.length > 0) {
        throw sub.unexpected(t, 'one auth server (forward_auth asks a single upstream)');
      }
      const u = parseUpstream(sub, t);
      upstreams.push({ address: u.address, tls: u.tls === true, at: t });
    };
    for (const t of d.remainingArgs()) add(d, t);
    let uri: Token | null = null;
    const copy: CopyHeader[] = [];
    for (const sub of d.blockLines()) {
      const name = sub.name.text;
      switch (name) {
        case 'uri': {
          if (uri !== null) {
            throw sub.error(
              sub.name,
              ProxyfileErrorCode.DUPLICATE_DIRECTIVE,
              `"uri" is already set at ${uri.file}:${uri.line}:${uri.column}`,
            );
          }
          uri = sub.nonEmptyArg('the auth endpoint path, e.g. /api/authz/forward-auth');
          sub.end();
          sub.noBlock();
          checkPlaceholders(uri, 'the forward_auth uri');
          break;
        }
        case 'to':
          for (const t of sub.remainingArgs()) add(sub, t);
          sub.noBlock();
          break;
        case 'copy_headers': {
          const fields = [...sub.remainingArgs(), ...sub.blockLines().flatMap((l) => [l.name, ...l.remainingArgs()])];
          if (fields.length === 0) throw sub.missing('the headers to copy, e.g. Remote-User Remote-Groups');
          for (const t of fields) {
            const gt = t.text.indexOf('>');
            const from = gt < 0 ? t.text : t.text.slice(0, gt);
            const to = gt < 0 ? t.text : t.text.slice(gt + 1);
            checkHeaderName(sub, t, from);
            checkHeaderName(sub, t, to);
            if (copy.some((c) => c.to.toLowerCase() === to.toLowerCase())) {
              throw sub.error(t, ProxyfileErrorCode.DUPLICATE_DIRECTIVE, `header ${to} is already copied`);
            }
            copy.push({ from, to });
          }
          break;
        }
        default: {
          const near = nearest(name, OPTIONS);
          throw sub.unexpected(
            sub.name,
            `a forward_auth option${near ? ` (did you mean "${near}"?)` : ''}: ${OPTIONS.join(', ')}`,
            ProxyfileErrorCode.UNKNOWN_DIRECTIVE,
          );
        }
      }
    }
    const first = upstreams[0];
    if (first === undefined) throw d.missing('the auth server address (host:port), e.g. authelia:9091');
    if (uri === null) throw d.missing('a block with "uri <path>": the auth endpoint, e.g. /api/authz/forward-auth');
    state.target.forward_auth = {
      upstreams: [first.address],
      tls: first.tls,
      uri: uri.text,
      copy_headers: copy,
      ...(matcher === null ? {} : { matcher }),
    };
  },
};
