import { isIP } from 'node:net';

/**
 * Top-level labels that no public CA will ever issue for: reserved by
 * RFC 2606 / RFC 6761 (`test`, `example`, `invalid`, `localhost`), mDNS
 * (`local`, RFC 6762) and ICANN's private-use `internal`.
 */
const LOCAL_TLDS: ReadonlySet<string> = new Set(['localhost', 'local', 'internal', 'test', 'example', 'invalid']);

/**
 * Whether `name` has no public suffix, so only the local CA can certify it:
 * an IP address (v4 or v6, brackets allowed), a single-label name
 * (`myhost`), `localhost` and `*.localhost`, `home.arpa` and its subdomains
 * (RFC 8375), and any name under `.local`, `.internal`, `.test`, `.example`
 * or `.invalid`. A leading `*.` and a trailing dot are ignored; case-insensitive.
 * Pure; the orchestrator uses it to pick the local CA for a name the
 * Proxyfile does not assign an issuer to.
 */
export function isLocalName(name: string): boolean {
  let host = name.trim().toLowerCase();
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  if (isIP(host) !== 0) return true;
  if (host.endsWith('.')) host = host.slice(0, -1);
  if (host.startsWith('*.')) host = host.slice(2);
  if (host === '') return false;
  const labels = host.split('.');
  if (labels.length === 1) return true;
  if (host === 'home.arpa' || host.endsWith('.home.arpa')) return true;
  return LOCAL_TLDS.has(labels[labels.length - 1] as string);
}
