import type { DnsProvider, TxtRecord } from '../dns-provider.js';
import { type ApiAnswer, JsonApi, record } from './json-api.js';

/** Options of {@link HetznerProvider}. */
export interface HetznerOptions {
  /** A Hetzner DNS API token. Secret. */
  apiToken: string;
  /** Default `https://dns.hetzner.com/api/v1`. */
  baseUrl?: string;
  timeoutMs?: number;
}

const PER_PAGE = 100;

/**
 * Hetzner DNS's API (dns.hetzner.com/api-docs): the zone id from `GET
 * /zones?name=`, `POST /records` with `{ zone_id, type, name (relative),
 * value, ttl }` to add, `DELETE /records/{id}` to remove (the id kept from
 * the add, else found by paging through `GET /records?zone_id=`, whose
 * `meta.pagination.last_page` says when to stop). Errors come as
 * `{ error: { message, code } }` or `{ message }` (401).
 */
export class HetznerProvider implements DnsProvider {
  readonly name = 'hetzner';
  readonly #api: JsonApi;
  readonly #zones = new Map<string, string>();
  readonly #ids = new Map<string, string>();

  constructor(options: HetznerOptions) {
    this.#api = new JsonApi({
      provider: 'hetzner',
      baseUrl: options.baseUrl ?? 'https://dns.hetzner.com/api/v1',
      headers: { 'auth-api-token': options.apiToken },
      timeoutMs: options.timeoutMs,
    });
  }

  async appendTxt(txt: TxtRecord): Promise<void> {
    const zoneId = await this.#zoneId(txt.zone);
    const answer = await this.#api.request({
      method: 'POST',
      path: '/records',
      body: { zone_id: zoneId, type: 'TXT', name: txt.relativeName, value: txt.value, ttl: txt.ttl },
    });
    const created = record(record(this.#check(`adding TXT ${txt.fqdn}`, answer)).record);
    if (typeof created.id === 'string') this.#ids.set(`${txt.fqdn} ${txt.value}`, created.id);
  }

  async deleteTxt(txt: TxtRecord): Promise<void> {
    const zoneId = await this.#zoneId(txt.zone);
    const key = `${txt.fqdn} ${txt.value}`;
    const id = this.#ids.get(key) ?? (await this.#find(zoneId, txt));
    if (id === null) return;
    const answer = await this.#api.request({ method: 'DELETE', path: `/records/${id}` });
    // Already gone is what was wanted.
    if (answer.status !== 404) this.#check(`deleting TXT ${txt.fqdn}`, answer);
    this.#ids.delete(key);
  }

  async #zoneId(zone: string): Promise<string> {
    const known = this.#zones.get(zone);
    if (known !== undefined) return known;
    const answer = await this.#api.request({ method: 'GET', path: `/zones?name=${encodeURIComponent(zone)}` });
    const body = record(this.#check(`looking up zone ${zone}`, answer));
    const found = (Array.isArray(body.zones) ? body.zones : []).map(record).find((z) => z.name === zone);
    if (found === undefined || typeof found.id !== 'string') {
      throw this.#api.error(`zone ${zone} is not in this account`);
    }
    this.#zones.set(zone, found.id);
    return found.id;
  }

  async #find(zoneId: string, txt: TxtRecord): Promise<string | null> {
    for (let page = 1; ; page++) {
      const answer = await this.#api.request({
        method: 'GET',
        path: `/records?zone_id=${encodeURIComponent(zoneId)}&page=${page}&per_page=${PER_PAGE}`,
      });
      const body = record(this.#check(`listing the records of ${txt.zone}`, answer));
      const match = (Array.isArray(body.records) ? body.records : [])
        .map(record)
        .find((r) => r.type === 'TXT' && r.name === txt.relativeName && r.value === txt.value);
      if (match !== undefined && typeof match.id === 'string') return match.id;
      const pagination = record(record(body.meta).pagination);
      const last = typeof pagination.last_page === 'number' ? pagination.last_page : page;
      if (page >= last) return null;
    }
  }

  #check(what: string, answer: ApiAnswer): unknown {
    if (answer.status >= 200 && answer.status < 300) return answer.body;
    const body = record(answer.body);
    const error = record(body.error);
    const message =
      typeof error.message === 'string' ? error.message : typeof body.message === 'string' ? body.message : null;
    throw this.#api.refused(what, answer, message);
  }
}
