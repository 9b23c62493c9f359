import { type Static, Type } from 'typebox';

/**
 * `dns <provider> [<credential>] { <option> <value> … }`: the DNS provider
 * that publishes DNS-01 records. Option values are kept as written: a
 * credential is an `{env.NAME}` placeholder or a `*_file` path, resolved
 * when the provider is built, so no secret is ever part of the config.
 */
export const DnsProviderConfig = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      description: 'rfc2136, cloudflare, hetzner, digitalocean, desec or exec',
    }),
    options: Type.Record(Type.String(), Type.String(), {
      description: 'Provider options as written (credentials as {env.NAME} or *_file paths, never the secret itself)',
    }),
  },
  { additionalProperties: false },
);
export type DnsProviderConfig = Static<typeof DnsProviderConfig>;

/** A site's DNS-01 settings: `tls { dns …; propagation_timeout …; resolvers …; authoritative_port … }`. */
export const DnsChallengeConfig = Type.Object(
  {
    provider: Type.Union([DnsProviderConfig, Type.Null()], {
      description: "The site's DNS provider; null: the global acme_dns",
    }),
    propagation_timeout_ms: Type.Union([Type.Integer({ minimum: -1 }), Type.Null()], {
      description:
        "How long the zone's authoritative servers may take to answer the TXT record, ms; -1 skips the check (default null: 120000)",
    }),
    resolvers: Type.Array(Type.String(), {
      description:
        'host[:port] of the resolvers for the zone, CNAME and NS lookups (default empty: the system resolvers)',
    }),
    authoritative_port: Type.Union([Type.Integer({ minimum: 1, maximum: 65535 }), Type.Null()], {
      description: "Port the zone's authoritative servers are asked on in the propagation check (default null: 53)",
    }),
  },
  { additionalProperties: false },
);
export type DnsChallengeConfig = Static<typeof DnsChallengeConfig>;
