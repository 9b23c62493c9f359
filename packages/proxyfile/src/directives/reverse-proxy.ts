import { defaultReverseProxy, type HeaderOp, type LbPolicy, type UpstreamAddress } from '@proxyd/model';
import type { Dispenser } from '../dispenser.js';
import { ProxyfileErrorCode } from '../errors.js';
import { setHandler } from '../handler.js';
import { quoteText, type Token } from '../lexer.js';
import { readMatcherToken } from '../matchers.js';
import { nearest } from '../suggest.js';
import { parseUpstream, readDuration } from '../values.js';
import type { Directive } from './directive.js';
import { readHeaderOp } from './header.js';

const OPTIONS = [
  'to',
  'lb_policy',
  'health_uri',
  'health_interval',
  'health_timeout',
  'fail_duration',
  'lb_retries',
  'lb_try_duration',
  'lb_try_interval',
  'header_up',
  'header_down',
  'flush_interval',
  'stream_timeout',
  'transport',
];
const LB_POLICIES: readonly LbPolicy[] = [
  'round_robin',
  'least_conn',
  'random',
  'ip_hash',
  'first',
  'weighted_round_robin',
  'cookie',
];

/**
 * ```
 * reverse_proxy [@name] [<upstream>...] {
 *     to <upstream>...
 *     lb_policy round_robin|least_conn|random|ip_hash|first
 *     lb_policy weighted_round_robin <weight>...   # one per upstream, in order
 *     lb_policy cookie [<name> [<secret>]]         # sticky sessions (default name lb)
 *     lb_retries <n>                    # other upstreams tried after a failed connection
 *     lb_try_duration <duration>        # ... for this long
 *     lb_try_interval <duration>        # ... this far apart (default 250ms)
 *     health_uri <path>
 *     health_interval <duration>
 *     health_timeout <duration>
 *     fail_duration <duration>
 *     header_up [+|-]<name> [<value>]
 *     header_down [+|-]<name> [<value>] # the upstream's response headers
 *     flush_interval -1|<duration>      # -1: every response is a stream
 *     stream_timeout <duration>         # longest life of a streamed response
 *     transport tls {                   # or: transport http { tls ... }
 *         tls_insecure_skip_verify
 *         tls_server_name <name>
 *         tls_trusted_ca_certs <pem_file>
 *         read_timeout <duration>       # upstream silence limit (default 60s; 0: none)
 *         versions 1.1|2|h2c...         # 2 / h2c: HTTP/2 to the upstream (gRPC); h2c:// upstreams too
 *     }
 * }
 * ```
 * `<upstream>` is `host:port`, `[::1]:port`, or `http(s)://host[:port]`
 * (`https://` connects with TLS; default ports 80 / 443). Several upstreams
 * form one pool; `:port` is localhost. With `@name`, it answers only the
 * requests that matcher matches (the first such line), before the block's
 * own handler; `header_up` values may hold request placeholders.
 */
export const reverseProxy: Directive = {
  name: 'reverse_proxy',
  scope: 'any',
  once: false,
  parse(d, state) {
    const matcher = readMatcherToken(d, state);
    const upstreams: UpstreamAddress[] = [];
    let scheme: { tls: boolean; at: Token } | null = null;
    let h2c = false;
    const addUpstream = (sub: Dispenser, written: Token) => {
      // Caddy's `h2c://host:port`: cleartext HTTP/2 (prior knowledge) to that upstream.
      const isH2c = written.text.toLowerCase().startsWith('h2c://');
      const t = isH2c ? { ...written, text: `http://${written.text.slice(6)}` } : written;
      if (isH2c) h2c = true;
      const u = parseUpstream(sub, t);
      if (u.tls !== null) {
        if (scheme !== null && scheme.tls !== u.tls) {
          throw sub.error(
            t,
            ProxyfileErrorCode.INVALID_UPSTREAM,
            `upstream ${quoteText(t.text)} mixes http:// and https:// upstreams in one pool (the first was ${quoteText(scheme.at.text)})`,
          );
        }
        scheme ??= { tls: u.tls, at: t };
      }
      upstreams.push(u.address);
    };
    for (const t of d.remainingArgs()) addUpstream(d, t);
    const handler = defaultReverseProxy(upstreams);
    let transportTls = false;
    const headerUp: HeaderOp[] = [];
    const headerDown: HeaderOp[] = [];
    let weightsAt: Token | null = null;
    const once = new Map<string, Token>();
    for (const sub of d.blockLines()) {
      const name = sub.name.text;
      if (name !== 'to' && name !== 'header_up' && name !== 'header_down') {
        const first = once.get(name);
        if (first) {
          throw sub.error(
            sub.name,
            ProxyfileErrorCode.DUPLICATE_DIRECTIVE,
            `"${name}" is already set at ${first.file}:${first.line}:${first.column}`,
          );
        }
        once.set(name, sub.name);
      }
      switch (name) {
        case 'to': {
          const args = sub.remainingArgs();
          if (args.length === 0) throw sub.missing('an upstream address (host:port)');
          for (const t of args) addUpstream(sub, t);
          sub.noBlock();
          break;
        }
        case 'lb_policy': {
          const t = sub.arg(`a load-balancing policy (${LB_POLICIES.join(', ')})`);
          const policy = LB_POLICIES.find((p) => p === t.text);
          if (!policy) {
            throw sub.unexpected(
              t,
              `a load-balancing policy (${LB_POLICIES.join(', ')})`,
              ProxyfileErrorCode.INVALID_VALUE,
            );
          }
          handler.lb_policy = policy;
          if (policy === 'weighted_round_robin') {
            const weights = sub.remainingArgs();
            if (weights.length === 0) throw sub.missing('one weight per upstream, e.g. 3 1');
            handler.lb_weights = weights.map((w) => {
              if (!/^(0|[1-9]\d{0,5})$/.test(w.text)) {
                throw sub.unexpected(w, 'a weight: a whole number from 0 to 999999', ProxyfileErrorCode.INVALID_VALUE);
              }
              return Number(w.text);
            });
            weightsAt = t;
          } else if (policy === 'cookie') {
            const name = sub.nextArg();
            const secret = sub.nextArg();
            if (name !== null && !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name.text)) {
              throw sub.unexpected(
                name,
                "a cookie name (letters, digits and !#$%&'*+-.^_`|~)",
                ProxyfileErrorCode.INVALID_VALUE,
              );
            }
            if (secret !== null) sub.nonEmpty(secret, 'a secret that signs the cookie');
            handler.lb_cookie = { name: name?.text ?? 'lb', secret: secret?.text ?? null };
          }
          sub.end();
          sub.noBlock();
          break;
        }
        case 'lb_retries': {
          const t = sub.arg('a number of retries');
          if (!/^(0|[1-9]\d{0,3})$/.test(t.text)) {
            throw sub.unexpected(t, 'a number of retries (0-9999)', ProxyfileErrorCode.INVALID_VALUE);
          }
          handler.lb_retries = Number(t.text);
          sub.end();
          sub.noBlock();
          break;
        }
        case 'lb_try_duration':
          handler.lb_try_duration_ms = readDuration(sub, 0);
          sub.end();
          sub.noBlock();
          break;
        case 'lb_try_interval':
          handler.lb_try_interval_ms = readDuration(sub, 0);
          sub.end();
          sub.noBlock();
          break;
        case 'health_uri': {
          const t = sub.arg('a path such as /health');
          if (!t.text.startsWith('/'))
            throw sub.unexpected(t, 'a path starting with "/"', ProxyfileErrorCode.INVALID_VALUE);
          handler.health.uri = t.text;
          sub.end();
          sub.noBlock();
          break;
        }
        case 'health_interval':
          handler.health.interval_ms = readDuration(sub, 1);
          sub.end();
          sub.noBlock();
          break;
        case 'health_timeout':
          handler.health.timeout_ms = readDuration(sub, 1);
          sub.end();
          sub.noBlock();
          break;
        case 'fail_duration':
          handler.health.fail_duration_ms = readDuration(sub, 0);
          sub.end();
          sub.noBlock();
          break;
        case 'header_up':
          headerUp.push(...readHeaderOp(sub));
          break;
        case 'header_down':
          headerDown.push(...readHeaderOp(sub));
          break;
        case 'flush_interval': {
          const t = sub.peekArg();
          if (t?.text === '-1') {
            sub.nextArg();
            handler.flush_interval_ms = -1;
          } else handler.flush_interval_ms = readDuration(sub, 0);
          sub.end();
          sub.noBlock();
          break;
        }
        case 'stream_timeout':
          handler.stream_timeout_ms = readDuration(sub, 0);
          sub.end();
          sub.noBlock();
          break;
        case 'transport': {
          const t = sub.arg('a transport (tls or http)');
          if (t.text !== 'tls' && t.text !== 'http') {
            throw sub.unexpected(t, 'a transport (tls or http)', ProxyfileErrorCode.INVALID_VALUE);
          }
          sub.end();
          if (t.text === 'tls') transportTls = true;
          for (const opt of sub.blockLines()) {
            switch (opt.name.text) {
              case 'tls':
                transportTls = true;
                break;
              case 'tls_insecure_skip_verify':
                transportTls = true;
                handler.tls.insecure_skip_verify = true;
                break;
              case 'tls_server_name':
                transportTls = true;
                handler.tls.server_name = opt.nonEmptyArg('a server name').text;
                break;
              case 'tls_trusted_ca_certs':
                transportTls = true;
                handler.tls.ca_file = opt.nonEmptyArg('a PEM file of trusted CA certificates').text;
                break;
              case 'read_timeout':
                handler.read_timeout_ms = readDuration(opt, 0);
                break;
              case 'versions': {
                const list = opt.remainingArgs();
                if (list.length === 0) throw opt.missing('HTTP versions: 1.1, 2, h2c');
                const versions: ('1.1' | '2' | 'h2c')[] = [];
                for (const v of list) {
                  if (v.text !== '1.1' && v.text !== '2' && v.text !== 'h2c') {
                    throw opt.unexpected(v, 'an HTTP version: 1.1, 2 or h2c', ProxyfileErrorCode.INVALID_VALUE);
                  }
                  if (!versions.includes(v.text)) versions.push(v.text);
                }
                handler.versions = versions;
                break;
              }
              default:
                throw opt.unexpected(
                  opt.name,
                  'a transport option (tls, tls_insecure_skip_verify, tls_server_name, tls_trusted_ca_certs, read_timeout, versions)',
                  ProxyfileErrorCode.UNKNOWN_DIRECTIVE,
                );
            }
            opt.end();
            opt.noBlock();
          }
          break;
        }
        default: {
          const near = nearest(name, OPTIONS);
          throw sub.unexpected(
            sub.name,
            `a reverse_proxy option${near ? ` (did you mean "${near}"?)` : ''}: ${OPTIONS.join(', ')}`,
            ProxyfileErrorCode.UNKNOWN_DIRECTIVE,
          );
        }
      }
    }
    if (upstreams.length === 0) {
      if (d.hasBlock()) {
        throw d.error(
          d.name,
          ProxyfileErrorCode.UNEXPECTED_END,
          'reverse_proxy has no upstream: expected an upstream address (host:port) after "reverse_proxy" or a "to" line in its block',
        );
      }
      throw d.missing('an upstream address (host:port)');
    }
    const schemeTls = (scheme as { tls: boolean } | null)?.tls ?? false;
    if ((scheme as { tls: boolean } | null)?.tls === false && transportTls) {
      throw d.error(
        d.name,
        ProxyfileErrorCode.INVALID_UPSTREAM,
        'reverse_proxy: http:// upstreams cannot use transport tls (write https:// or drop the scheme)',
      );
    }
    if (h2c) {
      if (handler.versions !== undefined && !handler.versions.includes('h2c')) {
        throw d.error(
          d.name,
          ProxyfileErrorCode.INVALID_UPSTREAM,
          'reverse_proxy: an h2c:// upstream speaks cleartext HTTP/2: add h2c to transport http { versions }, or drop the scheme',
        );
      }
      handler.versions ??= ['h2c'];
    }
    if (weightsAt !== null && handler.lb_weights?.length !== upstreams.length) {
      throw d.error(
        weightsAt,
        ProxyfileErrorCode.INVALID_VALUE,
        `weighted_round_robin has ${handler.lb_weights?.length ?? 0} weights for ${upstreams.length} upstreams: write one weight per upstream, in order`,
      );
    }
    handler.tls.enabled = schemeTls || transportTls;
    handler.header_up = headerUp;
    if (headerDown.length > 0) handler.header_down = headerDown;
    if (matcher !== null) {
      // Not the block's handler: it answers, in file order, the requests its matcher matches.
      state.target.matched_proxies ??= [];
      state.target.matched_proxies.push({ matcher, handler });
      return;
    }
    setHandler(d, state, handler);
  },
};
