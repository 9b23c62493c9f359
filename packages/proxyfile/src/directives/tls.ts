import type { Dispenser } from '../dispenser.js';
import { ProxyfileErrorCode } from '../errors.js';
import type { Token } from '../lexer.js';
import { nearest } from '../suggest.js';
import type { BlockState, Directive } from './directive.js';

const SUBDIRECTIVES = ['on_demand'];

/**
 * ```
 * tls auto                      # default: certificates from the ACME CA
 * tls off                       # plain HTTP only
 * tls internal                  # certificate from proxyd's local CA
 * tls <cert_file> <key_file>    # certificate and key files (PEM)
 * tls [auto|internal] {         # Caddy's block form
 *     on_demand                 # obtain at the first handshake; needs on_demand_tls { ask <url> }
 * }
 * ```
 */
export const tls: Directive = {
  name: 'tls',
  scope: 'site',
  once: true,
  parse(d, state) {
    const expected = 'auto, off, internal, or <cert_file> <key_file>';
    const policy = state.site.tls;
    const first = d.hasBlock() ? d.nextArg() : d.arg(expected);
    if (first === null) {
      readBlock(d, state);
      return;
    }
    const second = d.nextArg();
    if (second !== null) {
      d.end();
      noBlock(d, 'tls <cert_file> <key_file> takes no block; on_demand needs tls auto or tls internal');
      d.nonEmpty(first, 'a certificate file (PEM)');
      d.nonEmpty(second, 'a key file (PEM)');
      policy.mode = 'manual';
      policy.cert_file = first.text;
      policy.key_file = second.text;
      return;
    }
    switch (first.text) {
      case 'auto':
      case 'internal':
        policy.mode = first.text;
        readBlock(d, state);
        return;
      case 'off':
        noBlock(d, 'tls off takes no block; on_demand needs tls auto or tls internal');
        policy.mode = first.text;
        return;
      default:
        d.noBlock();
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

/** Throws at the `{` of a form that takes no block, saying which forms do. */
function noBlock(d: Dispenser, why: string): void {
  if (d.line.block) throw d.unexpected(d.line.block.open, `the end of the line (${why})`);
}

/** The block of `tls [auto|internal] { … }`: `on_demand`, once. */
function readBlock(d: Dispenser, state: BlockState): void {
  let onDemandAt: Token | null = null;
  for (const sub of d.blockLines()) {
    const name = sub.name;
    if (!SUBDIRECTIVES.includes(name.text)) {
      const near = nearest(name.text, SUBDIRECTIVES);
      throw sub.unexpected(
        name,
        `a tls option${near ? ` (did you mean "${near}"?)` : ''}: ${SUBDIRECTIVES.join(', ')}`,
        ProxyfileErrorCode.UNKNOWN_DIRECTIVE,
      );
    }
    if (onDemandAt !== null) {
      throw sub.error(
        name,
        ProxyfileErrorCode.DUPLICATE_DIRECTIVE,
        `"on_demand" is already set at ${onDemandAt.file}:${onDemandAt.line}:${onDemandAt.column}`,
      );
    }
    onDemandAt = name;
    sub.end();
    sub.noBlock();
    // Fail closed: without an ask endpoint anyone could make proxyd order certificates for any name.
    if (state.global.on_demand_ask === null) {
      throw sub.error(
        name,
        ProxyfileErrorCode.DIRECTIVE_NOT_ALLOWED,
        '"on_demand" needs an ask endpoint: add "on_demand_tls { ask <url> }" to the global options (without one, anyone could make proxyd order certificates for any name)',
      );
    }
    state.site.tls.on_demand = true;
  }
}
