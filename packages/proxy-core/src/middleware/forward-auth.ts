import http, { type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { Duplex } from 'node:stream';
import type { ForwardAuth } from '@proxyd/model';
import { isHopByHop } from '../forward/hop-by-hop.js';
import type { RequestContext } from '../hooks.js';
import type { HeaderPlan } from './header-plan.js';
import { Template } from './placeholders.js';
import { matcherOf, type RequestMatch } from './request-matcher.js';

/** How long the auth server may take to answer, ms: past it the client gets 504. */
export const FORWARD_AUTH_TIMEOUT_MS = 10_000;

/** Request headers never sent to the auth server: the subrequest has no body. */
const NO_BODY = new Set(['content-length', 'transfer-encoding', 'expect', 'content-type']);

/** What a check decided: allowed (the request goes on), or answered (relayed or failed). */
export const AUTH_ALLOWED = 0;
export const AUTH_ANSWERED = 1;

/** Called when a check is done; `error` set when the auth server could not be asked (502/504). */
export type ForwardAuthDone = (verdict: typeof AUTH_ALLOWED | typeof AUTH_ANSWERED) => void;

/**
 * `forward_auth`, compiled once: the subrequest to the auth server, the
 * relay of its refusal, the copy of its headers on success. One keep-alive
 * agent per authenticator.
 */
export class ForwardAuthenticator {
  readonly #config: ForwardAuth;
  readonly #match: RequestMatch | null;
  readonly #uri: Template | null;
  readonly #agent: http.Agent;
  readonly #copy: readonly { readonly from: string; readonly to: string; readonly toName: string }[];

  constructor(config: ForwardAuth, matchers: ReadonlyMap<string, RequestMatch>) {
    this.#config = config;
    this.#match = matcherOf(matchers, config.matcher);
    this.#uri = Template.of(config.uri);
    // Idle kept-alive sockets close after 30 s, so a reload that drops the site leaves none behind for long.
    const agentOptions = { keepAlive: true, timeout: 30_000 };
    this.#agent = config.tls ? new https.Agent(agentOptions) : new http.Agent(agentOptions);
    this.#copy = config.copy_headers.map((c) => ({ from: c.from.toLowerCase(), to: c.to.toLowerCase(), toName: c.to }));
  }

  /** Whether the request is subject to the check (its matcher, when it has one). */
  applies(req: IncomingMessage, ctx: RequestContext): boolean {
    return this.#match === null || this.#match.matches(req, ctx);
  }

  /**
   * Asks the auth server about the request. On a 2xx, copies the headers
   * onto the request and calls `done(AUTH_ALLOWED)`; otherwise answers the
   * client with the auth server's answer (`res`), or, when `res` is null (an
   * upgrade), writes its status line on `socket`; then `done(AUTH_ANSWERED)`.
   * `failed` answers when the auth server cannot be reached (502) or is too
   * slow (504).
   */
  check(
    req: IncomingMessage,
    ctx: RequestContext,
    target:
      | { res: ServerResponse; plan: HeaderPlan; refused?: ((status: number) => boolean) | undefined }
      | { socket: Duplex },
    failed: (status: number, message: string) => void,
    done: ForwardAuthDone,
  ): void {
    const upstream = this.#config.upstreams[0] as ForwardAuth['upstreams'][number];
    const headers: OutgoingHttpHeaders = {};
    const connection = req.headers.connection;
    const named = connection === undefined ? null : connection.toLowerCase().split(/\s*,\s*/);
    for (const [name, value] of Object.entries(req.headers)) {
      if (value === undefined || name.startsWith(':') || isHopByHop(name) || NO_BODY.has(name)) continue;
      if (named?.includes(name) === true) continue;
      headers[name] = value;
    }
    const url = req.url ?? '/';
    headers['x-forwarded-method'] = req.method ?? 'GET';
    headers['x-forwarded-proto'] = ctx.secure ? 'https' : 'http';
    headers['x-forwarded-host'] = req.headers.host ?? ctx.host;
    headers['x-forwarded-uri'] = url;
    headers['x-forwarded-for'] = ctx.clientIp;
    const path = this.#uri === null ? this.#config.uri : this.#uri.render(req, ctx);
    const client = this.#config.tls ? https : http;
    let settled = false;
    const settle = (): boolean => {
      if (settled) return false;
      settled = true;
      return true;
    };
    const sub = client.request(
      {
        host: upstream.host,
        port: upstream.port,
        method: 'GET',
        path: path.startsWith('/') ? path : `/${path}`,
        headers,
        agent: this.#agent,
        timeout: FORWARD_AUTH_TIMEOUT_MS,
      },
      (answer) => {
        if (!settle()) {
          answer.resume();
          return;
        }
        const status = answer.statusCode ?? 502;
        if (status >= 200 && status < 300) {
          answer.resume();
          this.#copyHeaders(req, answer);
          done(AUTH_ALLOWED);
          return;
        }
        if ('socket' in target) {
          answer.resume();
          target.socket.end(
            `HTTP/1.1 ${status} ${http.STATUS_CODES[status] ?? ''}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`,
          );
          done(AUTH_ANSWERED);
          return;
        }
        // `handle_errors` for this status answers instead (oauth2-proxy's `handle_errors 401 { redir … }`).
        if (target.refused?.(status) === true) {
          answer.resume();
          done(AUTH_ANSWERED);
          return;
        }
        // Relayed as the auth server answered: status, headers (hop-by-hop dropped), body.
        const out: OutgoingHttpHeaders = {};
        for (const [name, value] of Object.entries(answer.headers)) {
          if (value !== undefined && !isHopByHop(name)) out[name] = value;
        }
        target.plan.editFor(req, ctx)(out, status);
        req.resume();
        target.res.writeHead(status, out);
        answer.pipe(target.res);
        answer.on('error', () => target.res.destroy());
        done(AUTH_ANSWERED);
      },
    );
    sub.on('timeout', () => {
      sub.destroy();
      if (settle()) {
        failed(504, 'auth server timeout');
        done(AUTH_ANSWERED);
      }
    });
    sub.on('error', () => {
      if (settle()) {
        failed(502, 'auth server unreachable');
        done(AUTH_ANSWERED);
      }
    });
    sub.end();
  }

  /**
   * `copy_headers`: each named header of the auth answer replaces the
   * request's; one the answer lacks is removed from the request, so a
   * client cannot send its own `Remote-User`. Both the raw lines (what the
   * upstream gets) and `req.headers` (what matchers and placeholders read).
   */
  #copyHeaders(req: IncomingMessage, answer: IncomingMessage): void {
    if (this.#copy.length === 0) return;
    const raw = req.rawHeaders;
    for (const c of this.#copy) {
      for (let i = raw.length - 2; i >= 0; i -= 2) {
        if ((raw[i] as string).toLowerCase() === c.to) raw.splice(i, 2);
      }
      const value = answer.headers[c.from];
      if (value === undefined) {
        delete req.headers[c.to];
        continue;
      }
      const line = Array.isArray(value) ? value.join(', ') : value;
      raw.push(c.toName, line);
      req.headers[c.to] = line;
    }
  }

  /** Closes the kept-alive sockets to the auth server. */
  close(): void {
    this.#agent.destroy();
  }
}
