import {
  type Config,
  defaultGlobalOptions,
  defaultReverseProxy,
  emptySite,
  type SiteAddress,
  type UpstreamAddress,
} from '@proxyd/proxy-core/model';
import { ProxyfileError, ProxyfileErrorCode } from './errors.js';

/** Options of {@link parse}. */
export interface ParseOptions {
  /** Name used in error positions (default `Proxyfile`). */
  filename?: string;
}

interface Token {
  text: string;
  line: number;
  column: number;
}

function tokenize(text: string): Token[][] {
  const lines: Token[][] = [];
  text.split('\n').forEach((raw, index) => {
    const tokens: Token[] = [];
    const re = /"([^"]*)"|(\S+)/g;
    for (let m = re.exec(raw); m !== null; m = re.exec(raw)) {
      const word = m[1] ?? m[2] ?? '';
      if (m[2]?.startsWith('#')) break;
      tokens.push({ text: word, line: index + 1, column: m.index + 1 });
    }
    if (tokens.length > 0) lines.push(tokens);
  });
  return lines;
}

function hostPort(token: Token, file: string): UpstreamAddress {
  const m = /^([A-Za-z0-9.-]+|\[[0-9a-fA-F:]+\]):(\d{1,5})$/.exec(token.text);
  const port = Number(m?.[2]);
  if (!m?.[1] || port < 1 || port > 65535) {
    throw new ProxyfileError(
      ProxyfileErrorCode.INVALID_VALUE,
      { file, line: token.line, column: token.column },
      `unexpected "${token.text}", expected an upstream address (host:port)`,
    );
  }
  return { host: m[1].replace(/^\[|\]$/g, ''), port };
}

function siteAddress(token: Token): SiteAddress {
  const m = /^(?:(https?):\/\/)?([^:/,]+)(?::(\d+))?,?$/.exec(token.text);
  return {
    scheme: (m?.[1] as 'http' | 'https' | undefined) ?? null,
    host: (m?.[2] ?? token.text).toLowerCase(),
    port: m?.[3] ? Number(m[3]) : null,
  };
}

/**
 * Parses Proxyfile text into the config model, or throws {@link ProxyfileError}.
 * Walking-skeleton subset: the global block and site blocks with reverse_proxy.
 */
export function parse(text: string, options: ParseOptions = {}): Config {
  const file = options.filename ?? 'Proxyfile';
  const config: Config = { global: defaultGlobalOptions(), sites: [] };
  const fail = (t: Token, detail: string): never => {
    throw new ProxyfileError(ProxyfileErrorCode.UNEXPECTED_TOKEN, { file, line: t.line, column: t.column }, detail);
  };
  const lines = tokenize(text);
  let i = 0;
  while (i < lines.length) {
    const head = lines[i++] as Token[];
    const last = head[head.length - 1] as Token;
    if (last.text !== '{') fail(last, `unexpected "${last.text}", expected "{"`);
    const isGlobal = head.length === 1 && config.sites.length === 0 && i === 1;
    const site = isGlobal ? null : emptySite(head.slice(0, -1).map(siteAddress));
    for (;;) {
      const line = lines[i++];
      if (!line) fail(last, 'unexpected end of file, expected "}"');
      const [name, ...args] = line as [Token, ...Token[]];
      if (name.text === '}') break;
      if (site === null) {
        if (name.text === 'http_port' || name.text === 'https_port') {
          const port = Number(args[0]?.text);
          if (!Number.isInteger(port) || port < 1 || port > 65535) fail(args[0] ?? name, 'expected a port (1-65535)');
          config.global[name.text] = port;
        } else if (name.text === 'admin') {
          config.global.admin = args[0]?.text ?? fail(name, 'expected host:port');
        } else if (name.text === 'email') {
          config.global.email = args[0]?.text ?? fail(name, 'expected an email address');
        } else fail(name, `unknown global option "${name.text}"`);
      } else if (name.text === 'reverse_proxy') {
        if (args.length === 0) fail(name, 'expected an upstream address (host:port)');
        site.handler = defaultReverseProxy(args.map((a) => hostPort(a, file)));
      } else if (name.text === 'tls' && args[0]?.text === 'off') {
        site.tls.mode = 'off';
      } else fail(name, `unknown directive "${name.text}"`);
    }
    if (site) config.sites.push(site);
  }
  return config;
}
