import type { DnsProvider, TxtRecord } from '../dns-provider.js';
import { type ApiAnswer, JsonApi, record } from './json-api.js';

/** Options of {@link CloudflareProvider}. */
export interface CloudflareOptions {
  /** An API token with Zone:DNS:Edit (and Zone:Read) for the zone. Secret. */
  apiToken: string;
  /** Default `https://api.cloudflare.com/client/v4`. */
  baseUrl?: string;
  timeoutMs?: number;
}

/** Cloudflare's smallest TTL other than 1 ("automatic"), s. */
const MIN_TTL = 60;
const PER_PAGE = 100;

/**
 * Cloudflare's API v4 (developers.cloudflare.com/api, "DNS Records for a
 * Zone"): the zone id from `GET /zones?name=`, `POST
 * /zones/{id}/dns_records` to add, `DELETE /zones/{id}/dns_records/{rid}`
 * to remove (the record found by id kept from the add, else by paging
 * through `GET /zones/{id}/dns_records?type=TXT&name=`). Every answer is the
 * v4 envelope `{ success, errors: [{ code, message }], result,
 * result_info }`; a `success: false` is refused with its errors.
 */
export class CloudflareProvider implements DnsProvider {
  readonly name = 'cloudflare';
  readonly #api: JsonApi;
  readonly #zones = new Map<string, string>();
  readonly #ids = new Map<string, string>();

  constructor(options: CloudflareOptions) {
    this.#api = new JsonApi({
      provider: 'cloudflare',
      baseUrl: options.baseUrl ?? 'https://api.cloudflare.com/client/v4',
      headers: { authorization: `Bearer ${options.apiToken}` },
      timeoutMs: options.timeoutMs,
    });
  }

  async appendTxt(txt: TxtRecord): Promise<void> {
    const zoneId = await this.#zoneId(txt.zone);
    const answer = await this.#api.request({
      method: 'POST',
      path: `/zones/${zoneId}/dns_records`,
      body: { type: 'TXT', name: txt.fqdn, content: txt.value, ttl: Math.max(MIN_TTL, txt.ttl) },
    });
    const result = record(this.#check(`adding TXT ${txt.fqdn}`, answer));
    if (typeof result.id === 'string') this.#ids.set(`${txt.fqdn} ${txt.value}`, result.id);
  }

  async deleteTxt(txt: TxtRecord): Promise<void> {
    const zoneId = await this.#zoneId(txt.zone);
    const key = `${txt.fqdn} ${txt.value}`;
    const id = this.#ids.get(key) ?? (await this.#find(zoneId, txt));
    if (id === null) return;
    const answer = await this.#api.request({ method: 'DELETE', path: `/zones/${zoneId}/dns_records/${id}` });
    this.#check(`deleting TXT ${txt.fqdn}`, answer);
    this.#ids.delete(key);
  }

  async #zoneId(zone: string): Promise<string> {
    const known = this.#zones.get(zone);
    if (known !== undefined) return known;
    const answer = await this.#api.request({ method: 'GET', path: `/zones?name=${encodeURIComponent(zone)}` });
    const result = this.#check(`looking up zone ${zone}`, answer);
    const found = (Array.isArray(result) ? result : []).map(record).find((z) => z.name === zone);
    if (found === undefined || typeof found.id !== 'string') {
      throw this.#api.error(`zone ${zone} is not in this account (or the token may not read it)`);
    }
    this.#zones.set(zone, found.id);
    return found.id;
  }

  /** The id of the record holding `txt.value`, paging through the TXT records of its name; null when none. */
  async #find(zoneId: string, txt: TxtRecord): Promise<string | null> {
    for (let page = 1; ; page++) {
      const answer = await this.#api.request({
        method: 'GET',
        path: `/zones/${zoneId}/dns_records?type=TXT&name=${encodeURIComponent(txt.fqdn)}&page=${page}&per_page=${PER_PAGE}`,
      });
      const result = this.#check(`listing TXT ${txt.fqdn}`, answer);
      const match = (Array.isArray(result) ? result : [])
        .map(record)
        .find((r) => typeof r.content === 'string' && unquote(r.content) === txt.value);
      if (match !== undefined && typeof match.id === 'string') return match.id;
      const info = record(record(answer.body).result_info);
      const totalPages = typeof info.total_pages === 'number' ? info.total_pages : page;
      if (page >= totalPages) return null;
    }
  }

  /** The envelope's `result` when `success`; else the refusal with Cloudflare's errors. */
  #check(what: string, answer: ApiAnswer): unknown {
    const body = record(answer.body);
    if (answer.status >= 200 && answer.status < 300 && body.success === true) return body.result;
    const errors = Array.isArray(body.errors)
      ? body.errors
          .map(record)
          .map((e) => `${String(e.message ?? 'error')}${e.code === undefined ? '' : ` (code ${String(e.code)})`}`)
      : [];
    throw this.#api.refused(what, answer, errors.length > 0 ? errors.join('; ') : null);
  }
}

/** Cloudflare may answer a TXT's content quoted. */
function unquote(content: string): string {
  return content.length >= 2 && content.startsWith('"') && content.endsWith('"') ? content.slice(1, -1) : content;
}
