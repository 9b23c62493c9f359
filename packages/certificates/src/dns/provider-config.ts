import { readFileSync } from 'node:fs';
import { CertificatesError, CertificatesErrorCode } from '../errors.js';
import { parseDnsServer } from './dns-client.js';
import type { DnsProvider, TxtRecord } from './dns-provider.js';
import { Dns01Solver } from './dns01-solver.js';
import { ExecProvider } from './exec.js';
import { CloudflareProvider } from './http/cloudflare.js';
import { DesecProvider } from './http/desec.js';
import { DigitalOceanProvider } from './http/digitalocean.js';
import { HetznerProvider } from './http/hetzner.js';
import { Rfc2136Provider } from './rfc2136.js';
import { isTsigAlgorithm } from './tsig.js';

/** A DNS provider as the Proxyfile writes it (`dns <name> { <option> <value> }`): credentials as `{env.NAME}` or `*_file`. */
export interface DnsProviderSettings {
  name: string;
  options: Readonly<Record<string, string>>;
}

/** A site's DNS-01 settings: the provider and how the record is checked. */
export interface DnsChallengeSettings {
  provider: DnsProviderSettings;
  /** ms; -1 skips the propagation check; null the default (2 min). */
  propagation_timeout_ms: number | null;
  resolvers: readonly string[];
  authoritative_port: number | null;
}

/** Where credentials come from (the process's by default; tests pass their own). */
export interface SecretSources {
  env?: Readonly<Record<string, string | undefined>>;
  readFile?: (path: string) => string;
}

const ENV_PLACEHOLDER = /^\{env\.([A-Za-z_][A-Za-z0-9_]*)\}$/;

/**
 * An option's value with `{env.NAME}` and `<option>_file` resolved: the
 * secret itself, trimmed. Null when neither is set. Throws
 * `CERT_DNS_PROVIDER_INVALID` naming the variable or file (never a value).
 */
export function resolveSecret(
  settings: DnsProviderSettings,
  option: string,
  sources: SecretSources = {},
): string | null {
  const env = sources.env ?? process.env;
  const where = `${option} of dns ${settings.name}`;
  const text = settings.options[option];
  if (text !== undefined) {
    const match = ENV_PLACEHOLDER.exec(text);
    const value = match === null ? text : env[match[1] as string];
    if (value === undefined || value.trim() === '') {
      throw new CertificatesError(
        CertificatesErrorCode.DNS_PROVIDER_INVALID,
        `${where}: environment variable ${match?.[1] ?? '?'} is not set or empty`,
      );
    }
    return value.trim();
  }
  const file = settings.options[`${option}_file`];
  if (file === undefined) return null;
  let value: string;
  try {
    value = (sources.readFile ?? ((path: string) => readFileSync(path, 'utf8')))(file);
  } catch (err) {
    throw new CertificatesError(
      CertificatesErrorCode.DNS_PROVIDER_INVALID,
      `${option}_file of dns ${settings.name}: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
  if (value.trim() === '') {
    throw new CertificatesError(
      CertificatesErrorCode.DNS_PROVIDER_INVALID,
      `${option}_file of dns ${settings.name}: ${file} is empty`,
    );
  }
  return value.trim();
}

function required(settings: DnsProviderSettings, option: string, sources: SecretSources): string {
  const value = resolveSecret(settings, option, sources);
  if (value === null) {
    throw new CertificatesError(
      CertificatesErrorCode.DNS_PROVIDER_INVALID,
      `dns ${settings.name} needs ${option} or ${option}_file`,
    );
  }
  return value;
}

/**
 * Builds the provider `settings` name, credentials resolved now. Throws
 * `CERT_DNS_PROVIDER_INVALID` for an unknown provider, a missing option,
 * an unset variable or an unreadable file.
 */
export function createDnsProvider(settings: DnsProviderSettings, sources: SecretSources = {}): DnsProvider {
  const options = settings.options;
  switch (settings.name) {
    case 'rfc2136': {
      const server = options.server;
      if (server === undefined) throw invalid('dns rfc2136 needs server');
      const secret = resolveSecret(settings, 'key', sources);
      const keyName = options.key_name;
      const algorithm = options.key_alg ?? 'hmac-sha256';
      if (!isTsigAlgorithm(algorithm)) throw invalid(`dns rfc2136: key_alg ${algorithm} is not a TSIG algorithm`);
      if ((secret === null) !== (keyName === undefined)) {
        throw invalid('dns rfc2136 needs both key_name and key (or key_file), or neither');
      }
      let parsed: ReturnType<typeof parseDnsServer>;
      try {
        parsed = parseDnsServer(server);
      } catch (err) {
        throw invalid(`dns rfc2136: ${(err as Error).message}`);
      }
      return new Rfc2136Provider({
        server: parsed,
        ...(secret === null || keyName === undefined
          ? {}
          : { key: { name: keyName, algorithm, secret: Buffer.from(secret, 'base64') } }),
      });
    }
    case 'cloudflare':
      return new CloudflareProvider({ apiToken: required(settings, 'api_token', sources) });
    case 'hetzner':
      return new HetznerProvider({ apiToken: required(settings, 'api_token', sources) });
    case 'digitalocean':
      return new DigitalOceanProvider({ authToken: required(settings, 'auth_token', sources) });
    case 'desec':
      return new DesecProvider({ token: required(settings, 'token', sources) });
    case 'exec': {
      const command = options.command;
      if (command === undefined) throw invalid('dns exec needs command');
      const timeoutMs = options.timeout_ms === undefined ? undefined : Number(options.timeout_ms);
      return new ExecProvider({ command, ...(timeoutMs === undefined ? {} : { timeoutMs }) });
    }
    default:
      throw invalid(`unknown DNS provider "${settings.name}"`);
  }
}

function invalid(message: string): CertificatesError {
  return new CertificatesError(CertificatesErrorCode.DNS_PROVIDER_INVALID, message);
}

/** A provider that could not be built: every record fails with why, so the names back off and show it. */
class UnusableProvider implements DnsProvider {
  constructor(
    readonly name: string,
    readonly error: CertificatesError,
  ) {}
  appendTxt(_record: TxtRecord): Promise<void> {
    return Promise.reject(this.error);
  }
  deleteTxt(_record: TxtRecord): Promise<void> {
    return Promise.resolve();
  }
}

/**
 * The DNS-01 solver of a site's settings. A provider that cannot be built
 * (an unset variable, an unreadable file) does not stop the daemon: its
 * names fail with `CERT_DNS_PROVIDER_INVALID` (status `provider-invalid`)
 * and back off, and `onInvalid` hears it once.
 */
export function createDns01Solver(
  settings: DnsChallengeSettings,
  sources: SecretSources = {},
  onInvalid?: (error: CertificatesError) => void,
): Dns01Solver {
  let provider: DnsProvider;
  try {
    provider = createDnsProvider(settings.provider, sources);
  } catch (err) {
    const error =
      err instanceof CertificatesError ? err : invalid(`dns ${settings.provider.name}: ${(err as Error).message}`);
    onInvalid?.(error);
    provider = new UnusableProvider(settings.provider.name, error);
  }
  const timeout = settings.propagation_timeout_ms;
  const options = {
    ...(timeout === null ? {} : { propagationTimeoutMs: timeout < 0 ? null : timeout }),
    ...(settings.authoritative_port === null ? {} : { authoritativePort: settings.authoritative_port }),
  };
  try {
    return new Dns01Solver({ provider, resolvers: settings.resolvers, ...options });
  } catch (err) {
    // A resolver that is no host[:port]: the names fail with why, the daemon runs on.
    const error = invalid(`resolvers of dns ${settings.provider.name}: ${(err as Error).message}`);
    onInvalid?.(error);
    return new Dns01Solver({ provider: new UnusableProvider(settings.provider.name, error), ...options });
  }
}
