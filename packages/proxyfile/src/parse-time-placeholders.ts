// Placeholders the parser resolves while it reads tokens, before any directive sees them: `{$VAR}` from the
// environment and `{args[N]}` from an `import` line (request placeholders are `placeholders.ts`).
import { ProxyfileError, ProxyfileErrorCode } from './errors.js';
import { positionOf, show, type Token } from './lexer.js';

const ENV_PLACEHOLDER = /\{\$([A-Za-z_][A-Za-z0-9_]*)(?::([^}]*))?\}/g;

/**
 * Replaces `{$VAR}` / `{$VAR:default}` in every token (the token keeps what
 * was written in `source`). An unquoted token that becomes empty is marked
 * `vanished`: the parser leaves it out of its line.
 */
export function replaceEnv(tokens: Token[], env: Readonly<Record<string, string | undefined>>): Token[] {
  for (const t of tokens) {
    if (!t.text.includes('{$')) continue;
    let unset = true;
    let matched = false;
    const text = t.text.replace(ENV_PLACEHOLDER, (_m, name: string, fallback: string | undefined) => {
      matched = true;
      const value = env[name];
      if (value !== undefined || fallback !== undefined) unset = false;
      return value ?? fallback ?? '';
    });
    if (!matched) continue;
    t.text = text;
    t.source = t.raw;
    if (text === '' && !t.quoted) t.vanished = unset ? 'is not set (empty)' : 'is empty';
  }
  return tokens;
}

/** `{args[N]}`, `{args[N:M]}` (either bound optional), and Caddy's older `{args.N}`. */
const ARGS_PLACEHOLDER = /\{args(?:\[(\d*)(:?)(\d*)\]|\.(\d+))\}/g;

/**
 * Fills the import arguments into imported tokens. A token that is only
 * a range (`{args[:]}`, `{args[1:]}`) becomes one token per argument (none:
 * it disappears, as in Caddy); elsewhere a range is the arguments joined
 * with spaces. An index past the last argument is `PROXYFILE_INVALID_VALUE`
 * at the placeholder, naming the import.
 */
export function withArgs(tokens: Token[], args: readonly Token[], at: Token): Token[] {
  if (!tokens.some((t) => t.text.includes('{args'))) return tokens;
  const values = args.map((a) => a.text);
  const out: Token[] = [];
  for (const t of tokens) {
    if (!t.text.includes('{args')) {
      out.push(t);
      continue;
    }
    const pick = (m: RegExpMatchArray): string[] => {
      const [, from, colon, to, dotted] = m;
      if (dotted !== undefined || colon === '') {
        const n = Number(dotted ?? from);
        if (from === '' && dotted === undefined) {
          throw new ProxyfileError(
            ProxyfileErrorCode.UNEXPECTED_TOKEN,
            positionOf(t),
            `unexpected ${show(t)}, expected an argument index such as {args[0]}`,
          );
        }
        if (n >= values.length) {
          throw new ProxyfileError(
            ProxyfileErrorCode.INVALID_VALUE,
            positionOf(t),
            `${m[0]} needs ${n + 1} import argument${n === 0 ? '' : 's'}, but the import at ${at.file}:${at.line}:${at.column} passes ${values.length}`,
          );
        }
        return [values[n] as string];
      }
      return values.slice(from === '' ? 0 : Number(from), to === '' ? values.length : Number(to));
    };
    const whole = [...t.text.matchAll(ARGS_PLACEHOLDER)];
    const only = whole.length === 1 && (whole[0] as RegExpMatchArray)[0] === t.text;
    if (only && (whole[0] as RegExpMatchArray)[2] === ':') {
      for (const v of pick(whole[0] as RegExpMatchArray)) out.push({ ...t, text: v, source: t.source ?? t.raw });
      continue;
    }
    const text = t.text.replace(ARGS_PLACEHOLDER, (...m) => pick(m as unknown as RegExpMatchArray).join(' '));
    out.push({ ...t, text, source: t.source ?? t.raw });
  }
  return out;
}
