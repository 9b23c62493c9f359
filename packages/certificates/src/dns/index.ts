export {
  DNS_QUERY_TIMEOUT_MS,
  type DnsServer,
  formatDnsServer,
  parseDnsServer,
} from './dns-client.js';
export { type DnsProvider, relativeTo, type TxtRecord } from './dns-provider.js';
export { Dns01Solver, type Dns01SolverOptions, type DnsStep, dnsStepOf } from './dns01-solver.js';
export { ExecProvider, type ExecProviderOptions } from './exec.js';
export { type CloudflareOptions, CloudflareProvider } from './http/cloudflare.js';
export { type DesecOptions, DesecProvider } from './http/desec.js';
export { type DigitalOceanOptions, DigitalOceanProvider } from './http/digitalocean.js';
export { type HetznerOptions, HetznerProvider } from './http/hetzner.js';
export {
  type AuthoritativeServer,
  authoritativeServers,
  DNS_PROPAGATION_INTERVAL_MS,
  DNS_PROPAGATION_TIMEOUT_MS,
  type PropagationOptions,
  waitForTxt,
} from './propagation.js';
export {
  createDns01Solver,
  createDnsProvider,
  type DnsChallengeSettings,
  type DnsProviderSettings,
  resolveSecret,
  type SecretSources,
} from './provider-config.js';
export { type Rfc2136Options, Rfc2136Provider } from './rfc2136.js';
export { isTsigAlgorithm, TSIG_ALGORITHMS, type TsigAlgorithm, type TsigKey } from './tsig.js';
export { challengeRecordName, findZone } from './zone.js';
