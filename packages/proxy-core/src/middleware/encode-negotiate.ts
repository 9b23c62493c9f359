import type { Encoding } from '@proxyd/model';

/** One `Accept-Encoding` element: a lowercase coding (`x-gzip` read as `gzip`) and its weight, 0–1. */
interface Weighted {
  readonly coding: string;
  readonly q: number;
}

/** Parses `Accept-Encoding` (RFC 9110 §12.5.3); a malformed `q` counts as 0 (refused). */
function parseAcceptEncoding(header: string): Weighted[] {
  const out: Weighted[] = [];
  for (const part of header.split(',')) {
    const semi = part.indexOf(';');
    let coding = (semi < 0 ? part : part.slice(0, semi)).trim().toLowerCase();
    if (coding === '') continue;
    if (coding === 'x-gzip') coding = 'gzip';
    let q = 1;
    if (semi >= 0) {
      for (const param of part.slice(semi + 1).split(';')) {
        const eq = param.indexOf('=');
        if (eq < 0 || param.slice(0, eq).trim().toLowerCase() !== 'q') continue;
        const value = param.slice(eq + 1).trim();
        // RFC 9110 §12.4.2: qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ).
        q = /^(0(\.\d{0,3})?|1(\.0{0,3})?)$/.test(value) ? Number(value) : 0;
      }
    }
    out.push({ coding, q });
  }
  return out;
}

/** The weight a parsed header gives `coding`: its own entry, else `*`'s, else -1 (not mentioned). */
function weightOf(accepted: readonly Weighted[], coding: string): number {
  let star = -1;
  for (const a of accepted) {
    if (a.coding === coding) return a.q;
    if (a.coding === '*') star = a.q;
  }
  return star;
}

/**
 * The coding to send, or null for identity. Among the server's `encodings`
 * (its preference order) the client accepts (`q` > 0, named or through
 * `*`), the highest `q` wins; equal `q`s go to the server's order. An
 * absent or empty header gets identity (as Caddy and nginx do, though RFC
 * 9110 would allow any coding), and so does a client that names `identity`
 * with a higher `q` than every coding it accepts. `q=0` refuses a coding.
 */
export function negotiateEncoding(header: string | undefined, encodings: readonly Encoding[]): Encoding | null {
  if (header === undefined || header === '') return null;
  const accepted = parseAcceptEncoding(header);
  let best: Encoding | null = null;
  let bestQ = 0;
  for (const coding of encodings) {
    const q = weightOf(accepted, coding);
    if (q > bestQ) {
      best = coding;
      bestQ = q;
    }
  }
  if (best === null) return null;
  for (const a of accepted) if (a.coding === 'identity' && a.q > bestQ) return null;
  return best;
}

/** Whether the client accepts `coding` (`q` > 0, named or through `*`); the cache step's variant lookup. */
export function acceptsCoding(header: string | undefined, coding: string): boolean {
  if (header === undefined || header === '') return false;
  return weightOf(parseAcceptEncoding(header), coding) > 0;
}

/**
 * Negotiation results by `Accept-Encoding` value for one `encode` config:
 * browsers send a handful of distinct values, so a request usually costs
 * one Map lookup. Bounded: cleared when it reaches {@link MEMO_MAX} values.
 */
export class EncodingNegotiator {
  readonly #memo = new Map<string, Encoding | null>();

  constructor(readonly encodings: readonly Encoding[]) {}

  /** {@link negotiateEncoding} for this config, memoised. */
  choose(header: string | undefined): Encoding | null {
    if (header === undefined || header === '') return null;
    const known = this.#memo.get(header);
    if (known !== undefined) return known;
    const chosen = negotiateEncoding(header, this.encodings);
    if (this.#memo.size >= MEMO_MAX) this.#memo.clear();
    this.#memo.set(header, chosen);
    return chosen;
  }
}

/** Distinct `Accept-Encoding` values remembered per site before the memo starts over. */
export const MEMO_MAX = 256;
