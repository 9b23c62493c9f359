/** The UTM parameters the rollups count. */
export interface UtmParams {
  source: string | null;
  medium: string | null;
  campaign: string | null;
}

/** Longest UTM value kept, characters (a longer one is cut). */
export const MAX_UTM_LENGTH = 96;

const NONE: Readonly<UtmParams> = Object.freeze({ source: null, medium: null, campaign: null });

/**
 * `utm_source`, `utm_medium` and `utm_campaign` of a query string (without
 * the `?`): form-decoded (`+` is a space), trimmed, cut to
 * {@link MAX_UTM_LENGTH}; null when absent, empty or not valid
 * percent-encoding. The first occurrence of a name wins. A query without
 * `utm_` costs one `indexOf`.
 */
export function parseUtm(query: string | undefined): Readonly<UtmParams> {
  if (query === undefined || query.indexOf('utm_') < 0) return NONE;
  const out: UtmParams = { source: null, medium: null, campaign: null };
  for (const pair of query.split('&')) {
    if (!pair.startsWith('utm_')) continue;
    const eq = pair.indexOf('=');
    if (eq < 0) continue;
    const name = pair.slice(4, eq);
    if (name !== 'source' && name !== 'medium' && name !== 'campaign') continue;
    if (out[name] !== null) continue;
    out[name] = decodeValue(pair.slice(eq + 1));
  }
  return out;
}

function decodeValue(raw: string): string | null {
  let value: string;
  try {
    value = decodeURIComponent(raw.replaceAll('+', ' ')).trim();
  } catch {
    return null;
  }
  if (value.length === 0) return null;
  return value.length > MAX_UTM_LENGTH ? value.slice(0, MAX_UTM_LENGTH) : value;
}
