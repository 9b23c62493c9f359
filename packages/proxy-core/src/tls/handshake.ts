import type { SecureContext, TLSSocket, TlsOptions } from 'node:tls';
import type { CertificateStore } from './certificate-store.js';

/** The ALPN protocol of ACME TLS-ALPN-01 validation (RFC 8737 §6.2). */
export const ACME_TLS_1 = 'acme-tls/1';

/**
 * The application protocols the HTTPS listeners speak, in the server's
 * order of preference: the one list both ALPN paths below read. One
 * listener serves both (`http2.createSecureServer` with `allowHTTP1`).
 */
export const HTTP_PROTOCOLS: readonly string[] = ['h2', 'http/1.1'];

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

/**
 * The suites the HTTPS listeners offer, in the server's order (honored).
 *
 * **TLS 1.3**: Node's three, with TLS_AES_128_GCM_SHA256 first, as Go
 * (Caddy) and Mozilla order them: a client offering both gets AES-128,
 * whose SHA-256 key schedule is cheaper per handshake than AES-256's
 * SHA-384 (bench/tls/notes/2026-11-24-handshake-cost.md).
 *
 * **TLS 1.2**: Mozilla's "intermediate" profile without its DHE suites
 * (issue 28): ECDHE key exchange with an AEAD cipher only. Node's default
 * list also has CBC suites (`ECDHE-RSA-AES128-SHA256`, and `HIGH` brings
 * `…-SHA`, static-RSA `AES128-GCM-SHA256` and DHE), which testssl reports
 * as obsolete CBC and LUCKY13-prone. The cost: clients older than
 * Mozilla's oldest for this profile (Android 4.4.2, Chrome 31, Firefox 27,
 * IE 11 on Windows 7, Java 8u31, OpenSSL 1.0.1, Safari 9) fail the
 * handshake. ECDSA suites come first as automatic HTTPS issues ECDSA keys;
 * OpenSSL skips the suites the certificate's key cannot sign for.
 */
export const CIPHER_PREFERENCE = [
  'TLS_AES_128_GCM_SHA256',
  'TLS_AES_256_GCM_SHA384',
  'TLS_CHACHA20_POLY1305_SHA256',
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');

/** The `tls.Server` options that choose a handshake's certificate, cipher suite and application protocol. */
export type HandshakeOptions = Pick<
  TlsOptions,
  'SNICallback' | 'ALPNProtocols' | 'ALPNCallback' | 'ciphers' | 'honorCipherOrder'
>;

type SniDone = (err: Error | null, ctx?: SecureContext) => void;

/**
 * The handshake options of an HTTPS listener.
 *
 * **Certificate.** From `certificates` by SNI (lowercased). A name the
 * store has no certificate for (null, a throw or a rejected promise), and
 * a client sending no SNI, fail the handshake with the `handshake_failure`
 * alert (40): the SNI callback answers no context, so OpenSSL is left with
 * the listener's default context, which holds no certificate. (An error
 * passed to the callback would instead drop the TCP connection without an
 * alert, which clients report as a reset.)
 *
 * **Protocol.** The first of {@link HTTP_PROTOCOLS} the client offers (none
 * in common: `no_application_protocol`, alert 120; a client sending no ALPN
 * gets none and speaks HTTP/1.1).
 *
 * **TLS-ALPN-01** (with `challenges`). A client offering `acme-tls/1` for a
 * name with a pending challenge gets `acme-tls/1` and the challenge
 * certificate, but only in a full TLS 1.3 handshake. Why: the certificate
 * is chosen in OpenSSL's certificate callback (Node's `SNICallback`) and
 * the protocol in the ALPN callback, and their order depends on the
 * version (measured on Node 24.21 / OpenSSL 3.0; `handshake.test.ts` pins
 * it): TLS 1.3 selects ALPN while parsing the ClientHello, before the
 * certificate callback, so the ALPN callback can leave the challenge
 * context on the socket for the SNI callback to present; TLS 1.2 selects
 * ALPN after the certificate callback (so that HTTP/2 can see the cipher),
 * when the certificate is already the site's own; a resumed session sends
 * no certificate at all. No public Node API gives the client's ALPN list
 * before the certificate in TLS 1.2, nor lets the server pick the version
 * by ALPN. So in TLS 1.2 and in resumed handshakes the `acme-tls/1` offer
 * is ignored: offered alone (as RFC 8737 §3 has validators do) it fails
 * with `no_application_protocol` instead of presenting the wrong
 * certificate. Validators negotiate TLS 1.3 (pebble's and Let's Encrypt's
 * use Go's crypto/tls, whose client offers 1.3 by default). Offering
 * `acme-tls/1` for a name without a pending challenge is the same: ignored.
 * Without `challenges` the protocol list is handed to Node
 * (`ALPNProtocols`): its native selection costs no JavaScript call per
 * handshake.
 */
export function handshakeOptions(
  certificates: CertificateStore,
  challenges: AlpnChallengeResponder | undefined,
): HandshakeOptions {
  function SNICallback(this: HandshakeSocket, name: string, done: SniDone): void {
    const challenge = this[kChallengeContext];
    if (challenge !== undefined) {
      done(null, challenge);
      return;
    }
    let result: SecureContext | null | Promise<SecureContext | null>;
    try {
      result = certificates.contextFor(name.toLowerCase());
    } catch {
      result = null;
    }
    if (result === null) done(null);
    else if (result instanceof Promise) {
      result.then(
        (ctx) => (ctx === null ? done(null) : done(null, ctx)),
        () => done(null),
      );
    } else done(null, result);
  }
  const suites = { ciphers: CIPHER_PREFERENCE, honorCipherOrder: true };
  if (challenges === undefined) return { SNICallback, ALPNProtocols: HTTP_PROTOCOLS as string[], ...suites };
  function ALPNCallback(
    this: HandshakeSocket,
    { servername, protocols }: { servername: string; protocols: string[] },
  ): string | undefined {
    if (servername && protocols.includes(ACME_TLS_1) && this.getProtocol() === 'TLSv1.3' && !this.isSessionReused()) {
      let ctx: SecureContext | null;
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
  return { SNICallback, ALPNCallback, ...suites };
}

/**
 * Run on each secure connection before HTTP sees it: a connection
 * that negotiated `acme-tls/1` served its purpose with the handshake (the
 * validator read the certificate) and carries no HTTP (RFC 8737 §3), so it
 * is closed.
 */
export function closeChallengeConnection(socket: TLSSocket): void {
  if (socket.alpnProtocol === ACME_TLS_1) socket.destroySoon();
}
