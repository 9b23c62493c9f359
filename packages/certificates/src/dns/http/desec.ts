import type { DnsProvider, TxtRecord } from '../dns-provider.js';
import { type ApiAnswer, JsonApi, record } from './json-api.js';

/** Options of {@link DesecProvider}. */
export interface DesecOptions {
  /** A deSEC API token. Secret. */
  token: string;
  /** Default `https://desec.io/api/v1`. */
  baseUrl?: string;
  timeoutMs?: number;
}

/** deSEC's default minimum TTL, s (a domain's `minimum_ttl`; lower is refused). */
const MIN_TTL = 3600;

/**
 * deSEC's API (desec.readthedocs.io, "Retrieving and Creating DNS
 * Records"): one RRset per name and type at `/domains/{zone}/rrsets/{subname}/TXT/`
 * (`…/rrsets/@/TXT/` for the apex), its `records` the quoted values.
 * Adding reads the RRset (404: none) and creates it (`POST /rrsets/`) or
 * patches it with the value added; removing patches it without the value,
 * which deletes it when none is left. A 429 (deSEC throttles per minute) is
 * retried once after its `Retry-After`. Errors come as `{ detail }` or
 * field lists such as `{ records: [...] }`.
 */
export class DesecProvider implements DnsProvider {
  readonly name = 'desec';
  readonly #api: JsonApi;

  constructor(options: DesecOptions) {
    this.#api = new JsonApi({
      provider: 'desec',
      baseUrl: options.baseUrl ?? 'https://desec.io/api/v1',
      headers: { authorization: `Token ${options.token}` },
      timeoutMs: options.timeoutMs,
    });
  }

  async appendTxt(txt: TxtRecord): Promise<void> {
    const current = await this.#records(txt);
    const quoted = `"${txt.value}"`;
    if (current === null) {
      const answer = await this.#api.request({
        method: 'POST',
        path: `/domains/${encodeURIComponent(txt.zone)}/rrsets/`,
        body: { subname: subname(txt), type: 'TXT', records: [quoted], ttl: Math.max(MIN_TTL, txt.ttl) },
      });
      this.#check(`adding TXT ${txt.fqdn}`, answer);
      return;
    }
    if (current.includes(quoted)) return;
    await this.#patch(txt, [...current, quoted], `adding TXT ${txt.fqdn}`);
  }

  async deleteTxt(txt: TxtRecord): Promise<void> {
    const current = await this.#records(txt);
    const quoted = `"${txt.value}"`;
    if (current === null || !current.includes(quoted)) return;
    await this.#patch(
      txt,
      current.filter((r) => r !== quoted),
      `deleting TXT ${txt.fqdn}`,
    );
  }

  #path(txt: TxtRecord): string {
    return `/domains/${encodeURIComponent(txt.zone)}/rrsets/${encodeURIComponent(subname(txt) || '@')}/TXT/`;
  }

  /** The RRset's records, or null when there is none. */
  async #records(txt: TxtRecord): Promise<string[] | null> {
    const answer = await this.#api.request({ method: 'GET', path: this.#path(txt) });
    if (answer.status === 404) return null;
    const body = record(this.#check(`reading TXT ${txt.fqdn}`, answer));
    return Array.isArray(body.records) ? body.records.filter((r): r is string => typeof r === 'string') : [];
  }

  async #patch(txt: TxtRecord, records: string[], what: string): Promise<void> {
    const answer = await this.#api.request({ method: 'PATCH', path: this.#path(txt), body: { records } });
    // An RRset patched empty is deleted: 204.
    this.#check(what, answer);
  }

  #check(what: string, answer: ApiAnswer): unknown {
    if (answer.status >= 200 && answer.status < 300) return answer.body;
    const body = record(answer.body);
    let detail: string | null = typeof body.detail === 'string' ? body.detail : null;
    if (detail === null && Object.keys(body).length > 0) {
      detail = Object.entries(body)
        .map(
          ([field, problems]) => `${field}: ${Array.isArray(problems) ? problems.join(' ') : JSON.stringify(problems)}`,
        )
        .join('; ');
    }
    throw this.#api.refused(what, answer, detail);
  }
}

function subname(txt: TxtRecord): string {
  return txt.relativeName === '@' ? '' : txt.relativeName;
}
