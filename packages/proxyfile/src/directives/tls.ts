import { ProxyfileErrorCode } from '../errors.js';
import type { Directive } from './directive.js';

/**
 * ```
 * tls auto                      # default: certificates from the ACME CA
 * tls off                       # plain HTTP only
 * tls internal                  # certificate from proxyd's local CA
 * tls <cert_file> <key_file>    # certificate and key files (PEM)
 * ```
 */
export const tls: Directive = {
  name: 'tls',
  scope: 'site',
  once: true,
  parse(d, state) {
    const expected = 'auto, off, internal, or <cert_file> <key_file>';
    const first = d.arg(expected);
    d.noBlock();
    const second = d.nextArg();
    const policy = state.site.tls;
    if (second !== null) {
      d.end();
      d.nonEmpty(first, 'a certificate file (PEM)');
      d.nonEmpty(second, 'a key file (PEM)');
      policy.mode = 'manual';
      policy.cert_file = first.text;
      policy.key_file = second.text;
      return;
    }
    switch (first.text) {
      case 'auto':
      case 'off':
      case 'internal':
        policy.mode = first.text;
        return;
      default:
        d.nonEmpty(first, expected);
        if (first.text.includes('@')) {
          throw d.unexpected(
            first,
            `${expected} (set the ACME email in the global block: email <address>)`,
            ProxyfileErrorCode.INVALID_VALUE,
          );
        }
        throw d.missing(
          `a key file after the certificate file (tls <cert_file> <key_file>), or one of auto, off, internal`,
        );
    }
  },
};
