import type { SecureContext, TLSSocket, TlsOptions } from 'node:tls';
import type { CertificateStore } from './certificate-store.js';

/** The ALPN protocol of ACME TLS-ALPN-01 validation (RFC 8737 §6.2). */
export const ACME_TLS_1 = 'acme-tls/1';

/**
 * The application protocols the HTTPS listeners speak, in the server's
 * order of preference: the one list both ALPN paths below read (`h2` joins
 * it later).
 */
export const HTTP_PROTOCOLS: readonly string[] = ['http/1.1'];

/**
 * The port automatic HTTPS answers TLS-ALPN-01 challenges through (RFC 8737):
 * for a server name with a pending challenge, the self-signed challenge
 * certificate (with its `acmeIdentifier` extension) as a secure context.
 */
export interface AlpnChallengeResponder {
  /**
   * The challenge certificate's context for a lowercase server name, or
   * null when that name has no TLS-ALPN-01 challenge pending. Synchronous:
   * it runs inside the handshake's ALPN selection. Must not throw (a throw
   * counts as null).
   */
  contextFor(serverName: string): SecureContext | null;
}

/** The challenge context chosen by ALPN selection, kept on the socket for the SNI callback. */
const kChallengeContext = Symbol('proxyd.acmeTlsContext');

type HandshakeSocket = TLSSocket & { [kChallengeContext]?: SecureContext };

/** The `tls.Server` options that choose a handshake's certificate and application protocol. */
export type HandshakeOptions = Pick<TlsOptions, 'SNICallback' | 'ALPNProtocols' | 'ALPNCallback'>;

/**
 * The handshake options of an HTTPS listener. The certificate comes from
 * `certificates` by SNI (an unknown name fails the handshake). The protocol
 * is the first of {@link HTTP_PROTOCOLS} the client offers (none offered in
 * common: the handshake fails with `no_application_protocol`, as Node's own
 * selection does; a client sending no ALPN gets none).
 *
 * With `challenges`, TLS-ALPN-01 is answered too: a client offering
 * `acme-tls/1` for a name the responder has a context for gets `acme-tls/1`
 * and the challenge certificate; offering only `acme-tls/1` for any other
 * name fails the handshake. Node 24 (OpenSSL 3) calls `ALPNCallback` first,
 * from ClientHello processing, with the SNI name already parsed, and the
 * `SNICallback` after it (from the certificate callback); both are called
 * with the TLSSocket as `this`. So the ALPN callback decides and leaves the
 * challenge context on the socket, and the SNI callback presents it: the
 * two cannot disagree. (Measured with a server logging both callbacks; the
 * loopback tests in `handshake.test.ts` pin the order.) Without
 * `challenges` the protocol list is handed to Node (`ALPNProtocols`): its
 * native selection costs no JavaScript call per handshake.
 */
export function handshakeOptions(
  certificates: CertificateStore,
  challenges: AlpnChallengeResponder | undefined,
): HandshakeOptions {
  function SNICallback(
    this: HandshakeSocket,
    name: string,
    callback: (err: Error | null, ctx?: SecureContext) => void,
  ): void {
    const challenge = this[kChallengeContext];
    if (challenge !== undefined) {
      callback(null, challenge);
      return;
    }
    let result: SecureContext | null | Promise<SecureContext | null>;
    try {
      result = certificates.contextFor(name.toLowerCase());
    } catch (err) {
      callback(err as Error);
      return;
    }
    if (result instanceof Promise) {
      result.then(
        (ctx) => (ctx ? callback(null, ctx) : callback(new Error(`no certificate for ${name}`))),
        (err: Error) => callback(err),
      );
    } else if (result === null) callback(new Error(`no certificate for ${name}`));
    else callback(null, result);
  }
  if (challenges === undefined) return { SNICallback, ALPNProtocols: HTTP_PROTOCOLS as string[] };
  function ALPNCallback(
    this: HandshakeSocket,
    { servername, protocols }: { servername: string; protocols: string[] },
  ): string | undefined {
    if (servername && protocols.includes(ACME_TLS_1)) {
      let ctx: SecureContext | null = null;
      try {
        ctx = (challenges as AlpnChallengeResponder).contextFor(servername.toLowerCase());
      } catch {
        ctx = null;
      }
      if (ctx !== null) {
        this[kChallengeContext] = ctx;
        return ACME_TLS_1;
      }
    }
    for (let i = 0; i < HTTP_PROTOCOLS.length; i++) {
      const protocol = HTTP_PROTOCOLS[i] as string;
      if (protocols.includes(protocol)) return protocol;
    }
    return undefined;
  }
  return { SNICallback, ALPNCallback };
}

/**
 * A `secureConnection` listener run before the HTTP server's: a connection
 * that negotiated `acme-tls/1` served its purpose with the handshake (the
 * validator read the certificate) and carries no HTTP (RFC 8737 §3), so it
 * is closed.
 */
export function closeChallengeConnection(socket: TLSSocket): void {
  if (socket.alpnProtocol === ACME_TLS_1) socket.destroySoon();
}
