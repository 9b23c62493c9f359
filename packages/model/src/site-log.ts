/** A site's access log (`log`): where it goes and how its file rolls. */
import { type Static, Type } from 'typebox';

/** `log` defaults (Caddy's): roll at 100 MiB, keep 10 rolled files for at most 90 days, gzip them. */
export const LOG_DEFAULTS = Object.freeze({
  roll_size_bytes: 100 * 1024 * 1024,
  roll_keep: 10,
  roll_keep_for_ms: 90 * 24 * 3_600_000,
  roll_gzip: true,
});

/** How a log file rolls (`output file <path> { roll_* }`). */
export const LogRoll = Type.Object(
  {
    size_bytes: Type.Integer({ minimum: 1, description: 'Size at which the file rolls, bytes (default 100 MiB)' }),
    keep: Type.Integer({ minimum: 0, description: 'Rolled files kept; 0: no count limit (default 10)' }),
    keep_for_ms: Type.Integer({
      minimum: 0,
      description: 'Age after which a rolled file is deleted, ms; 0: no age limit (default 90 days)',
    }),
    gzip: Type.Boolean({ description: 'Gzip rolled files (default true; `roll_uncompressed` turns it off)' }),
  },
  { additionalProperties: false },
);
export type LogRoll = Static<typeof LogRoll>;

/** Where a site's access log goes: a file (rolled, or not with `roll_disabled`), stdout, stderr, or nowhere. */
export const LogOutput = Type.Union([
  Type.Object(
    {
      kind: Type.Literal('file'),
      path: Type.String({
        minLength: 1,
        description: "File path as written; a relative path is relative to the daemon's working directory",
      }),
      roll: Type.Union([LogRoll, Type.Null()], { description: 'null: never rolled (`roll_disabled`)' }),
    },
    { additionalProperties: false },
  ),
  Type.Object({ kind: Type.Literal('stdout') }, { additionalProperties: false }),
  Type.Object({ kind: Type.Literal('stderr') }, { additionalProperties: false }),
  Type.Object({ kind: Type.Literal('discard') }, { additionalProperties: false }),
]);
export type LogOutput = Static<typeof LogOutput>;

/** `log [{ output …; format json }]`: the site's access log, one JSON line per request. */
export const SiteLog = Type.Object(
  {
    output: LogOutput,
    format: Type.Literal('json', { description: 'Line format: json (Caddy-style access log lines)' }),
  },
  { additionalProperties: false },
);
export type SiteLog = Static<typeof SiteLog>;
