import {
  CATCH_ALL_HOST,
  type Config,
  catchAllDomain,
  defaultGlobalOptions,
  emptySite,
  type Site,
  type SiteAddress,
} from '@proxyd/model';
import type { BlockState } from './directives/directive.js';
import { DIRECTIVE_BY_NAME, DIRECTIVES } from './directives/index.js';
import { Dispenser } from './dispenser.js';
import { ProxyfileErrorCode } from './errors.js';
import { compileGlobal } from './global-options.js';
import { setHandler } from './handler.js';
import { show, type Token } from './lexer.js';
import { defineMatcher, isMatcherLine, type MatcherDefinitions } from './matchers.js';
import { checkModel } from './model-check.js';
import type { Document } from './parser.js';
import { nearest } from './suggest.js';
import { parseSiteAddresses } from './values.js';

const DIRECTIVE_NAMES = DIRECTIVES.map((d) => d.name);
const KNOWN = [...DIRECTIVE_NAMES].sort().join(', ');

function compileBlock(lines: Dispenser[], state: BlockState): void {
  for (const d of lines) {
    const name = d.name;
    if (isMatcherLine(d)) {
      // Site-level definitions were read before the directives (a matcher may be used above its definition).
      if (state.scope === 'site') continue;
      throw d.error(
        name,
        ProxyfileErrorCode.DIRECTIVE_NOT_ALLOWED,
        `matcher ${show(name)} is defined inside a handle block: define named matchers in the site block (they serve the whole site)`,
      );
    }
    // A quoted name is a directive too, as in Caddy: only braces depend on quoting.
    const directive = DIRECTIVE_BY_NAME.get(name.text);
    if (directive === undefined) {
      if (d.hasBlock() && /[.:]/.test(name.text) && !name.text.startsWith('/')) {
        throw d.error(
          name,
          ProxyfileErrorCode.UNKNOWN_DIRECTIVE,
          `unexpected site block ${show(name)} inside another block: is a "}" missing above it?`,
        );
      }
      if (/^\(.+\)$/.test(name.text)) {
        throw d.error(
          name,
          ProxyfileErrorCode.UNEXPECTED_TOKEN,
          `unexpected snippet definition ${show(name)} inside a block: define snippets at the top level of a file`,
        );
      }
      const near = nearest(name.text, DIRECTIVE_NAMES);
      throw d.error(
        name,
        ProxyfileErrorCode.UNKNOWN_DIRECTIVE,
        `unknown directive ${show(name)}${near ? `, did you mean "${near}"?` : ` (known: ${KNOWN})`}`,
      );
    }
    if (directive.scope === 'site' && state.scope === 'handle') {
      if (directive.name === 'handle' || directive.name === 'handle_path') {
        throw d.error(
          name,
          ProxyfileErrorCode.DIRECTIVE_NOT_ALLOWED,
          `"${directive.name}" blocks do not nest: write each path pattern as its own block in the site`,
        );
      }
      throw d.error(
        name,
        ProxyfileErrorCode.DIRECTIVE_NOT_ALLOWED,
        `"${directive.name}" applies to a whole site: move it out of the handle block to the site block`,
      );
    }
    if (directive.once) {
      const first = state.seen.get(directive.name);
      if (first) {
        throw d.error(
          name,
          ProxyfileErrorCode.DUPLICATE_DIRECTIVE,
          `"${directive.name}" appears twice in one block (first at ${first.file}:${first.line}:${first.column})`,
        );
      }
      state.seen.set(directive.name, name);
    }
    directive.parse(d, state);
  }
  // A handle or handle_errors block without its own root uses the site's (Caddy's root is site-wide).
  const inherited = state.root === null && state.scope === 'handle' ? state.siteRoot : undefined;
  if (inherited !== undefined && (state.fileServerAt !== null || state.tryFilesAt !== undefined)) {
    const at = state.fileServerAt ?? (state.tryFilesAt as Token);
    state.root = { dir: inherited, at };
  }
  if (state.tryFilesAt !== undefined) {
    const at = state.tryFilesAt;
    if (state.root === null) {
      throw new Dispenser({ tokens: [at], block: null }).error(
        at,
        ProxyfileErrorCode.DIRECTIVE_NOT_ALLOWED,
        'try_files looks files up below the root: add "root <dir>" to the block',
      );
    }
    if (state.target.try_files !== undefined) state.target.try_files.root = state.root.dir;
  }
  if (state.fileServerAt !== null) {
    const at = state.fileServerAt;
    const d = new Dispenser({ tokens: [at], block: null });
    if (state.root === null) {
      throw d.error(
        at,
        ProxyfileErrorCode.UNEXPECTED_END,
        'file_server has no directory: add "root <dir>" to the block',
      );
    }
    setHandler(d, state, { kind: 'file_server', root: state.root.dir }, at);
  } else if (
    state.root !== null &&
    state.tryFilesAt === undefined &&
    !(state.scope === 'site' && (state.site.handles.length > 0 || (state.site.handle_errors ?? []).length > 0))
  ) {
    const at = state.root.at;
    throw new Dispenser({ tokens: [at], block: null }).error(
      at,
      ProxyfileErrorCode.DIRECTIVE_NOT_ALLOWED,
      '"root" has no effect without "file_server": add file_server to the block',
    );
  }
}

/** One plain-HTTP or HTTPS listener a site address asks for, and the first address that did. */
interface PortUse {
  plain: boolean;
  token: Token;
}

/**
 * Checks the explicit port of each address against the listeners: the
 * http_port speaks plain HTTP, the https_port HTTPS, and any other port
 * whatever its first site asked for; a site asking otherwise is an error.
 */
function checkPorts(
  config: Config,
  keyed: readonly { site: Site; entries: readonly { address: SiteAddress; token: Token }[] }[],
): void {
  const { http_port: httpPort, https_port: httpsPort } = config.global;
  const ports = new Map<number, PortUse>();
  for (const { site, entries } of keyed) {
    for (const { address, token } of entries) {
      const port = address.port;
      if (port === null) continue;
      const plain = address.scheme === 'http' || site.tls.mode === 'off';
      const bad = (why: string) =>
        new Dispenser({ tokens: [token], block: null }).error(
          token,
          ProxyfileErrorCode.INVALID_SITE_ADDRESS,
          `site address ${show(token)}: ${why}`,
        );
      if (address.host === CATCH_ALL_HOST && port === httpsPort) {
        throw bad(
          `a catch-all site is plain HTTP (no host name, so no certificate), and port ${port} is the https_port, which speaks HTTPS: name the host, or pick another port`,
        );
      }
      if (port === httpPort && !plain) {
        throw bad(`port ${port} is the http_port, which speaks plain HTTP: write http:// or pick another port`);
      }
      if (port === httpsPort && plain) {
        throw bad(
          `port ${port} is the https_port, which speaks HTTPS, but this address is plain HTTP (http:// or tls off): pick another port`,
        );
      }
      if (port === httpPort || port === httpsPort) continue;
      const first = ports.get(port);
      if (first === undefined) ports.set(port, { plain, token });
      else if (first.plain !== plain) {
        throw bad(
          `port ${port} would need ${plain ? 'plain HTTP' : 'HTTPS'}, but ${show(first.token)} at ${first.token.file}:${first.token.line}:${first.token.column} serves ${first.plain ? 'plain HTTP' : 'HTTPS'} there (one port speaks one protocol)`,
        );
      }
    }
  }
}

/**
 * Compiles a parsed document into the config model; semantic errors carry
 * positions. The finished model is checked against proxy-core's `Config`
 * schema, so a valid-looking file never yields a model the data plane would
 * reject.
 */
export function compile(doc: Document): Config {
  const config: Config = { global: defaultGlobalOptions(), sites: [] };
  if (doc.global) compileGlobal(doc.global, config.global);
  const hosts = new Map<string, Token>();
  const keyed: { site: Site; entries: { address: SiteAddress; token: Token }[] }[] = [];
  for (const block of doc.sites) {
    const keys = new Dispenser({ tokens: block.keys as [Token, ...Token[]], block: null });
    const addresses: SiteAddress[] = [];
    const entries: { address: SiteAddress; token: Token }[] = [];
    for (const key of block.keys) {
      if (block.braceless && DIRECTIVE_BY_NAME.has(key.text)) {
        throw keys.unexpected(
          key,
          'a site address first: a directive stands inside a site (e.g. "example.com" on the line above it)',
        );
      }
      for (const entry of parseSiteAddresses(keys, key)) {
        const { address, token } = entry;
        // As in Caddy, an address on the HTTP port without a scheme is plain HTTP.
        if (address.scheme === null && address.port !== null && address.port === config.global.http_port) {
          address.scheme = 'http';
        }
        entries.push(entry);
        const catchAll = address.host === CATCH_ALL_HOST;
        // One catch-all per listener: ":80" and "http://" are both the http_port's.
        const key = catchAll ? catchAllDomain(address.port ?? config.global.http_port) : address.host;
        const first = hosts.get(key);
        if (first) {
          throw keys.error(
            token,
            ProxyfileErrorCode.DUPLICATE_SITE_ADDRESS,
            `duplicate site address ${show(token)}: ${
              catchAll
                ? `port ${address.port ?? config.global.http_port} already has a catch-all, the site`
                : `host "${address.host}" is already served by the site`
            } at ${first.file}:${first.line}:${first.column}`,
          );
        }
        hosts.set(key, token);
        addresses.push(address);
      }
    }
    if (addresses.length === 0) {
      throw keys.unexpected(block.keys[0] as Token, 'a site address', ProxyfileErrorCode.INVALID_SITE_ADDRESS);
    }
    const site = emptySite(addresses);
    keyed.push({ site, entries });
    const lines = block.block.lines.map((l) => new Dispenser(l));
    const definitions: MatcherDefinitions = new Map();
    for (const d of lines) if (isMatcherLine(d)) defineMatcher(d, definitions);
    if (definitions.size > 0) {
      site.matchers = Object.fromEntries([...definitions].map(([n, { matcher }]) => [n, matcher]));
    }
    // The site's `root <dir>` / `root * <dir>`, read first: its handle blocks inherit it.
    const rootLine = lines.find((l) => !l.name.quoted && l.name.text === 'root');
    const rootArgs = rootLine === undefined ? [] : rootLine.line.tokens.slice(1);
    const siteRoot = rootArgs.length > 0 ? (rootArgs[rootArgs.length - 1] as Token).text : undefined;
    const state: BlockState = {
      ...(siteRoot === undefined || siteRoot === '' ? {} : { siteRoot }),
      scope: 'site',
      target: site,
      site,
      global: config.global,
      seen: new Map(),
      handlerAt: null,
      root: null,
      fileServerAt: null,
      handlePatterns: new Map(),
      matchers: new Map([...definitions].map(([n, { at }]) => [n, at])),
      compileBlock,
    };
    compileBlock(lines, state);
    const tlsAt = state.seen.get('tls');
    if (tlsAt && site.tls.mode !== 'off' && addresses.every((a) => a.host === CATCH_ALL_HOST)) {
      throw keys.error(
        tlsAt,
        ProxyfileErrorCode.DIRECTIVE_NOT_ALLOWED,
        'a catch-all site has no host name to certify: it is served over plain HTTP (name the host for HTTPS)',
      );
    }
    config.sites.push(site);
  }
  checkPorts(config, keyed);
  checkModel(config, doc);
  return config;
}
