import {
  type Encoding,
  type HeaderOp,
  type HostPort,
  parseDomain,
  parseHeaderName,
  parsePort,
  parseRate,
} from '@proxyd/model';
import { chooseAddress } from './network.js';
import type { ContainerHealth, ContainerInfo } from './runtime/runtime.js';
import { type ContainerRef, containerRef, type LabelWarning } from './warnings.js';

/** The namespace of proxyd's labels. */
export const LABEL_PREFIX = 'proxy.';
/** The prefix of `proxy.header.<Header-Name>`. */
export const HEADER_LABEL_PREFIX = 'proxy.header.';
/** Every label name proxyd reads, besides `proxy.header.<Name>`. */
export const KNOWN_LABELS = [
  'proxy.domain',
  'proxy.port',
  'proxy.tls',
  'proxy.rate_limit',
  'proxy.encode',
  'proxy.network',
] as const;

/** The codings `proxy.encode` accepts (the Proxyfile's `encode`). */
const ENCODINGS: readonly Encoding[] = ['zstd', 'br', 'gzip'];

/** The site settings a container's labels ask for; every member of a pool should agree on them. */
export interface SiteSettings {
  /** `proxy.tls off` → `off` (plain HTTP, no certificate); else `auto`. */
  tls: 'auto' | 'off';
  /** `proxy.rate_limit <n>/s` → n requests per second per client IP; null when absent. */
  rateLimit: number | null;
  /** `proxy.header.<Name> <value>` → set operations, sorted by name. */
  headers: HeaderOp[];
  /**
   * `proxy.encode zstd,br,gzip` → the site's `encode` codings in preference
   * order (`minimum_length` the default, the model's
   * `ENCODE_DEFAULT_MINIMUM_LENGTH`, 512 bytes); absent: no compression.
   */
  encode?: Encoding[];
}

/** What one container contributes: the pool member of each of its domains. */
export interface ContainerMember {
  container: ContainerRef;
  /** Lowercase domains, deduplicated, in label order. */
  domains: string[];
  /** Where to forward to. */
  upstream: HostPort;
  health: ContainerHealth;
  settings: SiteSettings;
}

/** Context of {@link containerMember} beyond the container itself. */
export interface MemberContext {
  /** The configured default network; null when none. */
  defaultNetwork: string | null;
  /** proxyd's own container networks; null outside a container. */
  ownNetworks: readonly string[] | null;
}

/** The outcome for one discovered container: a member, or the warnings that keep it out (never half a route). */
export type MemberResult = { ok: true; member: ContainerMember } | { ok: false; warnings: LabelWarning[] };

/** Whether a container carries any `proxy.*` label (and so is looked at). */
export function hasProxyLabels(labels: Readonly<Record<string, string>>): boolean {
  for (const key of Object.keys(labels)) if (key.startsWith(LABEL_PREFIX)) return true;
  return false;
}

/** Edit distance with adjacent swaps (optimal string alignment), for label-name suggestions. */
function editDistance(a: string, b: string): number {
  const cols = b.length + 1;
  const d: number[] = new Array((a.length + 1) * cols).fill(0);
  for (let i = 0; i <= a.length; i++) d[i * cols] = i;
  for (let j = 0; j <= b.length; j++) d[j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      let v = Math.min(
        (d[(i - 1) * cols + j] as number) + 1,
        (d[i * cols + j - 1] as number) + 1,
        (d[(i - 1) * cols + j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        v = Math.min(v, (d[(i - 2) * cols + j - 2] as number) + 1);
      }
      d[i * cols + j] = v;
    }
  }
  return d[a.length * cols + b.length] as number;
}

/**
 * The known label nearest to an unknown one, when close enough to be a
 * typo: `proxy.prot` → `proxy.port`, `proxy.headers.X-A` →
 * `proxy.header.X-A`, `proxy.ratelimit` → `proxy.rate_limit`.
 */
export function nearestLabel(label: string): string | null {
  const lower = label.toLowerCase();
  const rest = lower.split('.').slice(2).join('.');
  const candidates: string[] = [...KNOWN_LABELS];
  if (rest !== '') candidates.push(`${HEADER_LABEL_PREFIX}${label.split('.').slice(2).join('.')}`);
  let best: string | null = null;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const known of candidates) {
    const dist = editDistance(lower, known.toLowerCase());
    if (dist < bestDistance) {
      best = known;
      bestDistance = dist;
    }
  }
  return best !== null && bestDistance <= Math.max(2, Math.floor(label.length / 5)) ? best : null;
}

/**
 * A header value as a label may hold it: not empty, no control characters
 * but tab (a newline would split the response header). Labels are the one
 * source whose values are not already single tokens of a line.
 */
function headerValueProblem(value: string): string | null {
  if (value.trim() === '') return 'has an empty value (write the header value)';
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what is refused.
  if (/[\u0000-\u0008\u000a-\u001f\u007f]/.test(value))
    return 'has a control character (such as a newline) in its value';
  return null;
}

/**
 * A discovered container (one with a `proxy.*` label) → its pool member,
 * or warnings and nothing. Pure. Labels (spec §2.5):
 *
 * | label | value |
 * |---|---|
 * | `proxy.domain` | one domain, or several separated by commas (`a.test, www.a.test`); each goes through the model's `parseDomain` (wildcards `*.a.test` accepted) |
 * | `proxy.port` | the container port, 1-65535 (`parsePort`); may be left out when the container exposes exactly one TCP port |
 * | `proxy.tls` | `off`: plain HTTP, no certificate; `auto` (the default) |
 * | `proxy.rate_limit` | `<n>/s` (`parseRate`) |
 * | `proxy.encode` | codings in preference order, separated by commas or spaces: `zstd`, `br`, `gzip` (the Proxyfile's `encode`) |
 * | `proxy.header.<Name>` | sets response header `<Name>` (`parseHeaderName`) to the value |
 * | `proxy.network` | the network to reach the container on (see `network.ts`) |
 *
 * Any invalid or unknown `proxy.*` label (an unknown one with the nearest
 * known name) gives a warning and no member: a route without the rate
 * limit or header the user meant to set is worse than none.
 */
export function containerMember(info: ContainerInfo, context: MemberContext): MemberResult {
  const container = containerRef(info.id, info.name);
  const warnings: LabelWarning[] = [];
  const warn = (label: string, reason: string) => warnings.push({ container, label, reason });
  const labels = info.labels;

  const domains: string[] = [];
  const domainText = labels['proxy.domain'];
  if (domainText === undefined) {
    warn('proxy.domain', 'is missing: the container has proxy.* labels but no proxy.domain, so it is not routed');
  } else {
    const items = domainText.split(',').map((s) => s.trim());
    if (items.every((s) => s === '')) warn('proxy.domain', 'is empty');
    else {
      for (const item of items) {
        if (item === '') {
          warn('proxy.domain', `${JSON.stringify(domainText)} has an empty item between commas`);
          continue;
        }
        const parsed = parseDomain(item);
        if (!parsed.ok) warn('proxy.domain', `${JSON.stringify(item)} ${parsed.problem}`);
        else if (!domains.includes(parsed.value)) domains.push(parsed.value);
      }
    }
  }

  let port: number | null = null;
  const portText = labels['proxy.port'];
  if (portText !== undefined) {
    const parsed = parsePort(portText.trim());
    if (parsed.ok) port = parsed.value;
    else warn('proxy.port', `${JSON.stringify(portText)} ${parsed.problem}`);
  } else if (info.exposedPorts.length === 1) {
    port = info.exposedPorts[0] as number;
  } else {
    warn(
      'proxy.port',
      info.exposedPorts.length === 0
        ? 'is missing and the container exposes no port: set proxy.port'
        : `is missing and the container exposes several ports (${info.exposedPorts.join(', ')}): set proxy.port`,
    );
  }

  let tls: SiteSettings['tls'] = 'auto';
  const tlsText = labels['proxy.tls'];
  if (tlsText !== undefined) {
    if (tlsText.trim() === 'off') tls = 'off';
    else if (tlsText.trim() !== 'auto')
      warn('proxy.tls', `${JSON.stringify(tlsText)} is not off (or auto, the default)`);
  }

  let rateLimit: number | null = null;
  const rateText = labels['proxy.rate_limit'];
  if (rateText !== undefined) {
    const parsed = parseRate(rateText.trim());
    if (parsed.ok) rateLimit = parsed.value;
    else warn('proxy.rate_limit', `${JSON.stringify(rateText)} ${parsed.problem}`);
  }

  let encode: Encoding[] | null = null;
  const encodeText = labels['proxy.encode'];
  if (encodeText !== undefined) {
    const items = encodeText.split(/[\s,]+/).filter((s) => s !== '');
    const bad = items.find((s) => !(ENCODINGS as readonly string[]).includes(s));
    if (items.length === 0) warn('proxy.encode', 'is empty (write zstd, br and/or gzip, e.g. zstd,gzip)');
    else if (bad !== undefined) warn('proxy.encode', `${JSON.stringify(bad)} is not an encoding (zstd, br or gzip)`);
    else if (new Set(items).size !== items.length)
      warn('proxy.encode', `${JSON.stringify(encodeText)} names an encoding twice`);
    else encode = items as Encoding[];
  }

  const headers: HeaderOp[] = [];
  const seenHeaders = new Map<string, string>();
  const unknown: string[] = [];
  for (const [label, value] of Object.entries(labels)) {
    if (!label.startsWith(LABEL_PREFIX) || (KNOWN_LABELS as readonly string[]).includes(label)) continue;
    if (!label.startsWith(HEADER_LABEL_PREFIX)) {
      unknown.push(label);
      continue;
    }
    const name = label.slice(HEADER_LABEL_PREFIX.length);
    const parsedName = parseHeaderName(name);
    if (!parsedName.ok) {
      warn(label, `the header name ${JSON.stringify(name)} ${parsedName.problem}`);
      continue;
    }
    const earlier = seenHeaders.get(name.toLowerCase());
    if (earlier !== undefined) {
      warn(label, `sets the same header as ${earlier} (header names are case-insensitive)`);
      continue;
    }
    seenHeaders.set(name.toLowerCase(), label);
    const problem = headerValueProblem(value);
    if (problem) warn(label, problem);
    else headers.push({ op: 'set', name: parsedName.value, value });
  }
  for (const label of unknown.sort()) {
    const near = nearestLabel(label);
    warn(label, near ? `is not a proxyd label (did you mean ${near}?)` : `is not a proxyd label`);
  }
  headers.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));

  const networkLabel = labels['proxy.network'];
  if (networkLabel !== undefined && networkLabel.trim() === '') warn('proxy.network', 'is empty');

  if (warnings.length > 0 || port === null) return { ok: false, warnings };

  const choice = chooseAddress({
    networkMode: info.networkMode,
    networks: info.networks,
    label: networkLabel?.trim() ?? null,
    defaultNetwork: context.defaultNetwork,
    ownNetworks: context.ownNetworks,
  });
  if (!choice.ok) {
    warn('proxy.network', choice.reason);
    return { ok: false, warnings };
  }
  return {
    ok: true,
    member: {
      container,
      domains,
      upstream: { host: choice.host, port },
      health: info.health,
      settings: encode === null ? { tls, rateLimit, headers } : { tls, rateLimit, headers, encode },
    },
  };
}
