/** The global options block of a Proxyfile. */
import { type Static, Type } from 'typebox';
import { BindAddress, Port } from './addresses.js';
import { BasicAuth } from './directives.js';
import { DnsProviderConfig } from './dns-challenge.js';
import { RedisStorageConfig } from './storage-options.js';
import { AcmeDirectoryUrl, AcmeEab, AutoHttps, HttpUrl, KeyType } from './tls.js';

/**
 * `docker`: container discovery (Docker/Podman `proxy.*` labels). On by
 * default, when a runtime socket answers; `docker off` turns it off.
 */
export const DockerOptions = Type.Object(
  {
    enabled: Type.Boolean({ description: 'Discover containers by their proxy.* labels (default true)' }),
    host: Type.Union([Type.String({ pattern: '^(unix:///|tcp://).+' }), Type.Null()], {
      description:
        'Runtime endpoint, unix:///<absolute path> or tcp://host:port (default null: DOCKER_HOST, else the first socket that answers of /var/run/docker.sock, $XDG_RUNTIME_DIR/podman/podman.sock, /run/podman/podman.sock)',
    }),
    network: Type.Union([Type.String({ pattern: '^[a-zA-Z0-9][a-zA-Z0-9_.-]*$' }), Type.Null()], {
      description:
        'Network used for a container on several networks that has no proxy.network label (default null: the network shared with proxyd, else the only one)',
    }),
  },
  { additionalProperties: false },
);
export type DockerOptions = Static<typeof DockerOptions>;

/**
 * `history`: per-domain analytics rollups kept in `<state_dir>/history.db`
 * (per minute, per hour, per day), each tier for its retention, the file
 * under `max_size_bytes`. On by default; `history off` turns it off.
 */
export const HistoryOptions = Type.Object(
  {
    enabled: Type.Boolean({ description: 'Keep analytics history in <state_dir>/history.db (default true)' }),
    minute_retention_ms: Type.Integer({ minimum: 3_600_000, description: 'Per-minute rows kept, ms (default 48 h)' }),
    hour_retention_ms: Type.Integer({ minimum: 86_400_000, description: 'Per-hour rows kept, ms (default 90 days)' }),
    day_retention_ms: Type.Union([Type.Integer({ minimum: 86_400_000 }), Type.Null()], {
      description: 'Per-day rows kept, ms (default null: until the size bound trims the oldest)',
    }),
    max_size_bytes: Type.Integer({
      minimum: 1_000_000,
      description: 'Size bound of the database file, bytes (default 256 MB)',
    }),
  },
  { additionalProperties: false },
);
export type HistoryOptions = Static<typeof HistoryOptions>;

/** `dashboard <address> { basic_auth <user> <bcrypt_hash> }`: the analytics dashboard's own listener (absent: none). */
export const DashboardOptions = Type.Object(
  {
    address: Type.String({
      minLength: 1,
      description: 'Dashboard listener host:port (the Proxyfile writes `:port` as 127.0.0.1:port)',
    }),
    basic_auth: BasicAuth,
  },
  { additionalProperties: false },
);
export type DashboardOptions = Static<typeof DashboardOptions>;

/**
 * `servers { timeouts { … } max_header_size … max_connections_per_ip … }`:
 * the limits of every data-plane listener (Caddy's `servers` global option,
 * for all listeners at once). Each field is optional: absent is the data
 * plane's default (`LISTENER_DEFAULTS`, `HTTP2_DEFAULTS`), given here.
 */
export const ServerOptions = Type.Object(
  {
    read_header_ms: Type.Optional(
      Type.Integer({
        minimum: 1,
        description:
          'A request head must have arrived this long after its first byte (or after the connection opened), ms; else 408 and close (default 60000)',
      }),
    ),
    read_body_ms: Type.Optional(
      Type.Integer({
        minimum: 0,
        description:
          'A request body being received may stall this long between two reads, ms; else 408 and close (default 60000; 0: none)',
      }),
    ),
    write_ms: Type.Optional(
      Type.Integer({
        minimum: 0,
        description:
          "A response must be written whole within this long after its request's head arrived, ms; else the connection (HTTP/2: the stream) is reset. WebSockets are exempt (default 0: none)",
      }),
    ),
    idle_ms: Type.Optional(
      Type.Integer({
        minimum: 1,
        description:
          'An idle keep-alive connection (HTTP/1.1) or HTTP/2 session closes after this, ms (default 75000 for HTTP/1.1, 120000 for HTTP/2); WebSockets are exempt',
      }),
    ),
    max_header_size_bytes: Type.Optional(
      Type.Integer({
        minimum: 1024,
        description:
          'Largest request head (HTTP/1.1: request line and headers; HTTP/2: header list), bytes; over it 431 (default 16384)',
      }),
    ),
    max_connections_per_ip: Type.Optional(
      Type.Integer({
        minimum: 0,
        description:
          'Connections one client address (an IPv6 client by its /64) may hold at once on the node, whatever the number of workers; a peer in trusted_proxies is exempt (default 256; 0: no cap)',
      }),
    ),
  },
  { additionalProperties: false },
);
export type ServerOptions = Static<typeof ServerOptions>;

/** The global options block. */
export const GlobalOptions = Type.Object(
  {
    http_port: Port,
    https_port: Port,
    email: Type.Union([Type.String(), Type.Null()], { description: 'ACME account contact' }),
    admin: Type.Union([Type.String(), Type.Null()], {
      description: 'Admin listener host:port (default 127.0.0.1:6190)',
    }),
    auto_https: AutoHttps,
    acme_ca: Type.Array(AcmeDirectoryUrl, {
      description:
        "ACME directory URLs, tried in order (a fallback list); empty (default): the daemon picks the public CA, Let's Encrypt production",
    }),
    acme_ca_root: Type.Union([Type.String({ minLength: 1 }), Type.Null()], {
      description:
        "PEM file of roots trusted for the ACME CA's own API endpoint, besides the bundled ones (default null)",
    }),
    acme_eab: Type.Union([AcmeEab, Type.Null()], { description: 'External account binding (default null: none)' }),
    // Optional, so configs written before DNS-01 read as before.
    acme_dns: Type.Optional(
      Type.Union([DnsProviderConfig, Type.Null()], {
        description:
          'The DNS provider for DNS-01 of every ACME name without its own (default absent: HTTP-01/TLS-ALPN-01)',
      }),
    ),
    on_demand_ask: Type.Union([HttpUrl, Type.Null()], {
      description:
        'URL asked `?domain=<name>` before an on-demand certificate is obtained; 2xx allows (default null: on-demand TLS refused)',
    }),
    key_type: KeyType,
    state_dir: Type.Union([Type.String(), Type.Null()], { description: 'Where routes and secrets persist' }),
    trusted_proxies: Type.Array(Type.String(), { description: 'CIDRs whose X-Forwarded-For is believed' }),
    geoip_db: Type.Union([Type.String(), Type.Null()], { description: 'MaxMind-format country database path' }),
    docker: DockerOptions,
    default_bind: Type.Array(BindAddress, {
      description:
        'Local addresses every data-plane listener binds (default empty: 0.0.0.0, every IPv4 address; the demo binds 127.0.0.1)',
    }),
    grace_period_ms: Type.Integer({
      minimum: 0,
      description:
        'How long a stop waits for requests, streams and WebSockets in flight before it cuts them, ms (default 30000)',
    }),
    metrics: Type.Union([Type.String(), Type.Null()], {
      description:
        'Metrics listener host:port: GET /metrics without the admin token (default null: none; the Proxyfile writes `:port` as 127.0.0.1:port)',
    }),
    // Optional, unlike the others: absent is `defaultHistoryOptions()`, so configs written before it still check.
    history: Type.Optional(HistoryOptions),
    // Optional rather than null by default, so every compiled Proxyfile without one reads as before.
    dashboard: Type.Optional(DashboardOptions),
    // Optional, like history: absent is every listener default.
    servers: Type.Optional(ServerOptions),
    // Optional: absent is the file storage in the cert dir, so every config without it reads as before.
    storage: Type.Optional(RedisStorageConfig),
  },
  { additionalProperties: false },
);
export type GlobalOptions = Static<typeof GlobalOptions>;
