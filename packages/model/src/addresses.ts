/**
 * Socket addresses of the model: the ports and local addresses listeners bind,
 * upstream addresses, and the addresses of a site block.
 */
import { type Static, Type } from 'typebox';

/**
 * A local IP address a listener binds (`bind`, `default_bind`), in
 * canonical form: IPv4 dotted quad or compressed lowercase IPv6;
 * `0.0.0.0` and `::` are every address of their family.
 */
export const BindAddress = Type.String({ minLength: 2, description: 'Local IP address, e.g. 127.0.0.1, ::1, 0.0.0.0' });
export type BindAddress = Static<typeof BindAddress>;

/** A TCP port, 1–65535. */
export const Port = Type.Integer({ minimum: 1, maximum: 65535, description: 'TCP port, 1–65535' });
export type Port = Static<typeof Port>;

/** An upstream to forward to. IPv6 hosts are stored without brackets. */
export const UpstreamAddress = Type.Object(
  {
    host: Type.String({ minLength: 1, description: 'Host name or IP address (IPv6 without brackets)' }),
    port: Port,
  },
  { additionalProperties: false, description: 'Upstream socket address' },
);
export type UpstreamAddress = Static<typeof UpstreamAddress>;

/** One address of a site block: `[scheme://]host[:port]`. */
export const SiteAddress = Type.Object(
  {
    scheme: Type.Union([Type.Literal('http'), Type.Literal('https'), Type.Null()], {
      description: 'Explicit scheme; null means HTTPS with automatic certificates unless tls off',
    }),
    host: Type.String({ minLength: 1, description: 'Lowercase host; *.example.com matches one label' }),
    port: Type.Union([Port, Type.Null()]),
  },
  { additionalProperties: false },
);
export type SiteAddress = Static<typeof SiteAddress>;
