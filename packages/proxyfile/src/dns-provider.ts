import type { DnsProviderConfig } from '@proxyd/model';
import type { Dispenser } from './dispenser.js';
import { ProxyfileErrorCode } from './errors.js';
import { show, type Token } from './lexer.js';
import { nearest } from './suggest.js';
import { parseDuration } from './values.js';

/** One DNS provider's options: which exist, which one a lone argument sets, and which hold a secret. */
interface ProviderSpec {
  options: readonly string[];
  /** The option `dns <provider> <arg>` sets (Caddy's short form), or null. */
  arg: string | null;
  /** Options whose value is a secret: only `{env.NAME}` is accepted, or `<option>_file <path>`. */
  secrets: readonly string[];
  /** Options of which one is required (a secret may come from its `_file`). */
  required: readonly (readonly string[])[];
}

const TSIG_ALGORITHMS = ['hmac-md5', 'hmac-sha1', 'hmac-sha224', 'hmac-sha256', 'hmac-sha384', 'hmac-sha512'];

const token = (name: string): ProviderSpec => ({
  options: [name, `${name}_file`],
  arg: name,
  secrets: [name],
  required: [[name, `${name}_file`]],
});

/** The providers and their options (names as Caddy's DNS modules spell them). */
const PROVIDERS: Record<string, ProviderSpec> = {
  rfc2136: {
    options: ['server', 'key_name', 'key_alg', 'key', 'key_file'],
    arg: null,
    secrets: ['key'],
    required: [['server']],
  },
  cloudflare: token('api_token'),
  hetzner: token('api_token'),
  digitalocean: token('auth_token'),
  desec: token('token'),
  exec: { options: ['command', 'timeout'], arg: 'command', secrets: [], required: [['command']] },
};

/** The DNS provider names the Proxyfile accepts. */
export const DNS_PROVIDERS = Object.keys(PROVIDERS);

/** `{env.NAME}`: where a secret option's value comes from. */
const ENV_PLACEHOLDER = /^\{env\.[A-Za-z_][A-Za-z0-9_]*\}$/;

/**
 * ```
 * dns <provider> [<value>] {      # <value>: the provider's one credential or command
 *     <option> <value>            # per provider:
 * }
 * # rfc2136:      server <host[:port]>  key_name <name>  key_alg <hmac-…>  key {env.NAME} | key_file <path>
 * # cloudflare:   api_token {env.NAME} | api_token_file <path>
 * # hetzner:      api_token {env.NAME} | api_token_file <path>
 * # digitalocean: auth_token {env.NAME} | auth_token_file <path>
 * # desec:        token {env.NAME} | token_file <path>
 * # exec:         command <path>  timeout <duration>
 * ```
 * Reads a provider from the line after its name (`dns` in a `tls` block,
 * the global `acme_dns`). A secret is never written in the file: its value
 * must be `{env.NAME}` or come from `<option>_file`.
 */
export function readDnsProvider(d: Dispenser, what: string): DnsProviderConfig {
  const nameToken = d.nonEmptyArg(`a DNS provider: ${DNS_PROVIDERS.join(', ')}`);
  const spec = PROVIDERS[nameToken.text];
  if (spec === undefined) {
    const near = nearest(nameToken.text, DNS_PROVIDERS);
    throw d.unexpected(
      nameToken,
      `a DNS provider${near ? ` (did you mean "${near}"?)` : ''}: ${DNS_PROVIDERS.join(', ')}`,
      ProxyfileErrorCode.INVALID_VALUE,
    );
  }
  const options: Record<string, string> = {};
  const seen = new Map<string, Token>();
  const arg = d.nextArg();
  if (arg !== null) {
    if (spec.arg === null) {
      throw d.unexpected(arg, `a block after "${what} ${nameToken.text}" (it takes its options in a block)`);
    }
    d.end();
    setOption(d, spec, options, seen, spec.arg, arg);
  }
  for (const sub of d.blockLines()) {
    const name = sub.name;
    if (!spec.options.includes(name.text)) {
      const near = nearest(name.text, spec.options);
      throw sub.unexpected(
        name,
        `a ${nameToken.text} option${near ? ` (did you mean "${near}"?)` : ''}: ${spec.options.join(', ')}`,
        ProxyfileErrorCode.UNKNOWN_DIRECTIVE,
      );
    }
    const value = sub.nonEmptyArg(`a value for ${name.text}`);
    sub.end();
    sub.noBlock();
    setOption(sub, spec, options, seen, name.text, value);
  }
  for (const group of spec.required) {
    if (!group.some((option) => options[option] !== undefined)) {
      throw d.error(
        nameToken,
        ProxyfileErrorCode.UNEXPECTED_END,
        `${what} ${nameToken.text} needs ${group.map((o) => `"${o}"`).join(' or ')}`,
      );
    }
  }
  if (nameToken.text === 'rfc2136') {
    const hasKey = options.key !== undefined || options.key_file !== undefined;
    if (hasKey !== (options.key_name !== undefined)) {
      throw d.error(
        nameToken,
        ProxyfileErrorCode.UNEXPECTED_END,
        `${what} rfc2136 needs both "key_name" and "key" (or "key_file") for TSIG, or neither`,
      );
    }
  }
  return { name: nameToken.text, options };
}

function setOption(
  d: Dispenser,
  spec: ProviderSpec,
  options: Record<string, string>,
  seen: Map<string, Token>,
  name: string,
  value: Token,
): void {
  const secret = spec.secrets.find((s) => name === s || name === `${s}_file`);
  const other = secret === undefined ? undefined : name === secret ? `${secret}_file` : secret;
  for (const clash of [name, other]) {
    const first = clash === undefined ? undefined : seen.get(clash);
    if (first !== undefined) {
      throw d.error(
        value,
        ProxyfileErrorCode.DUPLICATE_DIRECTIVE,
        `"${clash}" is already set at ${first.file}:${first.line}:${first.column}${clash === name ? '' : ` (${name} and ${clash} are one credential)`}`,
      );
    }
  }
  seen.set(name, value);
  if (spec.secrets.includes(name) && !ENV_PLACEHOLDER.test(value.text)) {
    throw d.error(
      value,
      ProxyfileErrorCode.INVALID_VALUE,
      `${name} is a secret and is never written in the Proxyfile: use {env.NAME} (an environment variable) or ${name}_file <path>`,
    );
  }
  if (name === 'key_alg' && !TSIG_ALGORITHMS.includes(value.text)) {
    throw d.unexpected(value, `a TSIG algorithm: ${TSIG_ALGORITHMS.join(', ')}`, ProxyfileErrorCode.INVALID_VALUE);
  }
  if (name === 'timeout') {
    const ms = parseDuration(value.text);
    if (ms === null || ms < 1000) {
      throw d.unexpected(value, 'a duration of at least 1s, such as 30s', ProxyfileErrorCode.INVALID_VALUE);
    }
    options.timeout_ms = String(ms);
    return;
  }
  if (name === 'server' && /\s/.test(value.text)) {
    throw d.unexpected(value, `a DNS server (host or host:port), not ${show(value)}`, ProxyfileErrorCode.INVALID_VALUE);
  }
  options[name] = value.text;
}
