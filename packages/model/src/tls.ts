/** TLS and ACME settings: a site's `tls` policy and the global ACME options. */
import { type Static, Type } from 'typebox';
import { DnsChallengeConfig } from './dns-challenge.js';

/** `tls auto | off | internal | <cert_file> <key_file>`, and `tls [auto|internal] { on_demand; dns … }`. */
export const TlsPolicy = Type.Object(
  {
    mode: Type.Union([Type.Literal('auto'), Type.Literal('off'), Type.Literal('internal'), Type.Literal('manual')]),
    cert_file: Type.Union([Type.String(), Type.Null()]),
    key_file: Type.Union([Type.String(), Type.Null()]),
    on_demand: Type.Boolean({
      description:
        'Obtain the certificate at the first TLS handshake for a name, after the global on_demand_ask endpoint allows it (default false; only with mode auto or internal)',
    }),
    // Optional, so configs and routes written before DNS-01 read as before.
    dns: Type.Optional(
      Type.Union([DnsChallengeConfig, Type.Null()], {
        description:
          'DNS-01 for this site: its provider (or the global acme_dns) and propagation settings (default absent: HTTP-01/TLS-ALPN-01, or DNS-01 through acme_dns when set)',
      }),
    ),
  },
  { additionalProperties: false },
);
export type TlsPolicy = Static<typeof TlsPolicy>;

/** An `http(s)://` URL (the Proxyfile narrows `acme_ca` further: `http://` only for loopback hosts). */
export const HttpUrl = Type.String({ pattern: '^https?://[^\\s/?#]+[^\\s]*$' });

/** One ACME directory URL of `acme_ca`. */
export const AcmeDirectoryUrl = Type.String({
  pattern: '^https?://[^\\s/?#]+[^\\s]*$',
  description: 'ACME directory URL, e.g. https://acme-v02.api.letsencrypt.org/directory',
});
export type AcmeDirectoryUrl = Static<typeof AcmeDirectoryUrl>;

/** `acme_eab <key_id> <mac_key>`: external account binding (RFC 8555 §7.3.4), e.g. for ZeroSSL. */
export const AcmeEab = Type.Object(
  {
    key_id: Type.String({ minLength: 1, description: 'Key identifier the CA gave' }),
    mac_key: Type.String({
      minLength: 2,
      pattern: '^[A-Za-z0-9_-]+$',
      description: 'HMAC key the CA gave, base64url without padding',
    }),
  },
  { additionalProperties: false },
);
export type AcmeEab = Static<typeof AcmeEab>;

/** Key type of the certificates proxyd obtains (Caddy's spelling); `p256` (ECDSA P-256) is the default. */
export const KeyType = Type.Union([Type.Literal('p256'), Type.Literal('rsa2048')]);
export type KeyType = Static<typeof KeyType>;

/**
 * `auto_https` (Caddy's spelling): how much of automatic HTTPS runs. `on`
 * (the default, not written in a Proxyfile) obtains certificates and
 * redirects HTTP to HTTPS.
 */
export const AutoHttps = Type.Union(
  [Type.Literal('on'), Type.Literal('off'), Type.Literal('disable_redirects'), Type.Literal('disable_certs')],
  {
    description:
      'Automatic HTTPS (default on): off = no certificates and no redirects; disable_redirects = certificates, but HTTP is never redirected to HTTPS; disable_certs = redirects only where a certificate exists, none obtained automatically',
  },
);
export type AutoHttps = Static<typeof AutoHttps>;
