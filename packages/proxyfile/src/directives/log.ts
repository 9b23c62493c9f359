import { LOG_DEFAULTS, type LogOutput, type LogRoll, type SiteLog } from '@proxyd/model';
import type { Dispenser } from '../dispenser.js';
import { ProxyfileErrorCode } from '../errors.js';
import { show, type Token } from '../lexer.js';
import { nearest } from '../suggest.js';
import { parseDuration, parseSize } from '../values.js';
import type { Directive } from './directive.js';

const OPTIONS = ['output', 'format'];
const OUTPUTS = ['file', 'stdout', 'stderr', 'discard'];
const ROLL_OPTIONS = ['roll_size', 'roll_keep', 'roll_keep_for', 'roll_uncompressed', 'roll_disabled'];
const EXPECTED_OUTPUT = 'a log output: file <path>, stdout, stderr or discard';
const EXPECTED_SIZE = 'a size such as 100MiB, 10MB or 1048576';
const EXPECTED_DURATION = 'a duration such as 720h or 90d (0: no age limit)';

/**
 * ```
 * log [{
 *     output file <path> [{         # relative: to proxyd's working directory (Caddy's rule)
 *         roll_size     <size>      # roll when the file would pass it; default 100MiB
 *         roll_keep     <n>         # rolled files kept; default 10 (0: no count limit)
 *         roll_keep_for <duration>  # rolled files deleted past this age; default 90d (0: none)
 *         roll_uncompressed         # rolled files stay plain text (default: gzipped)
 *         roll_disabled             # never roll
 *     }]
 *     output stdout | stderr | discard
 *     format json                   # the one format (Caddy's default)
 * }]
 * ```
 * The site's access log, Caddy's directive: one JSON line per request the
 * site answered. Bare `log` writes to stderr, as Caddy's does. A rolled file
 * is renamed `<name>-<UTC time>.<ext>` beside the live one (Caddy's names).
 */
export const log: Directive = {
  name: 'log',
  scope: 'site',
  once: true,
  parse(d, state) {
    const extra = d.peekArg();
    if (extra !== null) {
      throw d.unexpected(
        extra,
        'a "{" or the end of the line (log takes no arguments: named loggers are not supported)',
      );
    }
    const config: SiteLog = { output: { kind: 'stderr' }, format: 'json' };
    const seen = new Map<string, Token>();
    for (const sub of d.blockLines()) {
      const name = sub.name;
      if (!OPTIONS.includes(name.text)) {
        const near = nearest(name.text, OPTIONS);
        throw sub.error(
          name,
          ProxyfileErrorCode.UNKNOWN_DIRECTIVE,
          `unexpected ${show(name)}, expected a log option${near ? ` (did you mean "${near}"?)` : ''}: ${OPTIONS.join(', ')}`,
        );
      }
      const first = seen.get(name.text);
      if (first !== undefined) {
        throw sub.error(
          name,
          ProxyfileErrorCode.DUPLICATE_DIRECTIVE,
          `"${name.text}" is set twice (first at ${first.file}:${first.line}:${first.column})`,
        );
      }
      seen.set(name.text, name);
      if (name.text === 'output') config.output = readOutput(sub);
      else readFormat(sub);
    }
    state.site.log = config;
  },
};

/** `output file <path> [{ roll_* }]`, `output stdout|stderr|discard`. */
function readOutput(d: Dispenser): LogOutput {
  const kind = d.arg(EXPECTED_OUTPUT);
  if (kind.text !== 'file') {
    if (!OUTPUTS.includes(kind.text)) throw d.unexpected(kind, EXPECTED_OUTPUT, ProxyfileErrorCode.INVALID_VALUE);
    d.end();
    if (d.line.block) throw d.unexpected(d.line.block.open, `the end of the line (output ${kind.text} takes no block)`);
    return { kind: kind.text as 'stdout' | 'stderr' | 'discard' };
  }
  const path = d.nonEmptyArg('a log file path');
  d.end();
  return { kind: 'file', path: path.text, roll: readRoll(d) };
}

/** The block of `output file <path> { … }`; no block: every default. */
function readRoll(d: Dispenser): LogRoll | null {
  const roll: LogRoll = {
    size_bytes: LOG_DEFAULTS.roll_size_bytes,
    keep: LOG_DEFAULTS.roll_keep,
    keep_for_ms: LOG_DEFAULTS.roll_keep_for_ms,
    gzip: LOG_DEFAULTS.roll_gzip,
  };
  const seen = new Map<string, Token>();
  for (const sub of d.blockLines()) {
    const name = sub.name;
    if (!ROLL_OPTIONS.includes(name.text)) {
      const near = nearest(name.text, ROLL_OPTIONS);
      throw sub.error(
        name,
        ProxyfileErrorCode.UNKNOWN_DIRECTIVE,
        `unexpected ${show(name)}, expected a log file option${near ? ` (did you mean "${near}"?)` : ''}: ${ROLL_OPTIONS.join(', ')}`,
      );
    }
    const first = seen.get(name.text);
    if (first !== undefined) {
      throw sub.error(
        name,
        ProxyfileErrorCode.DUPLICATE_DIRECTIVE,
        `"${name.text}" is set twice (first at ${first.file}:${first.line}:${first.column})`,
      );
    }
    seen.set(name.text, name);
    switch (name.text) {
      case 'roll_size': {
        const t = sub.arg(EXPECTED_SIZE);
        const bytes = parseSize(t.text);
        if (bytes === null || bytes < 1) throw sub.unexpected(t, EXPECTED_SIZE, ProxyfileErrorCode.INVALID_VALUE);
        roll.size_bytes = bytes;
        break;
      }
      case 'roll_keep': {
        const t = sub.arg('a number of rolled files to keep (0: no limit)');
        if (!/^\d{1,6}$/.test(t.text)) {
          throw sub.unexpected(t, 'a number of rolled files to keep, 0-999999', ProxyfileErrorCode.INVALID_VALUE);
        }
        roll.keep = Number(t.text);
        break;
      }
      case 'roll_keep_for': {
        const t = sub.arg(EXPECTED_DURATION);
        const ms = parseDuration(t.text);
        if (ms === null) throw sub.unexpected(t, EXPECTED_DURATION, ProxyfileErrorCode.INVALID_VALUE);
        roll.keep_for_ms = ms;
        break;
      }
      case 'roll_uncompressed':
        roll.gzip = false;
        break;
    }
    sub.end();
    sub.noBlock();
  }
  const disabled = seen.get('roll_disabled');
  if (disabled === undefined) return roll;
  const other = [...seen.values()].find((t) => t !== disabled);
  if (other !== undefined) {
    throw d.error(
      other,
      ProxyfileErrorCode.INVALID_VALUE,
      `${show(other)} has no effect with roll_disabled (at ${disabled.file}:${disabled.line}:${disabled.column}): the file never rolls`,
    );
  }
  return null;
}

/** `format json`: the one line format. */
function readFormat(d: Dispenser): void {
  const t = d.arg('a log format: json');
  if (t.text !== 'json') {
    const why = t.text === 'console' ? ' (console is not supported: access lines are JSON)' : '';
    throw d.unexpected(t, `a log format: json${why}`, ProxyfileErrorCode.INVALID_VALUE);
  }
  d.end();
  d.noBlock();
}
