import type { DnsProvider, TxtRecord } from '../dns-provider.js';
import { type ApiAnswer, JsonApi, record } from './json-api.js';

/** Options of {@link DigitalOceanProvider}. */
export interface DigitalOceanOptions {
  /** A personal access token with write scope. Secret. */
  authToken: string;
  /** Default `https://api.digitalocean.com/v2`. */
  baseUrl?: string;
  timeoutMs?: number;
}

/** DigitalOcean's smallest TTL, s. */
const MIN_TTL = 30;
const PER_PAGE = 100;

/**
 * DigitalOcean's API v2 (docs.digitalocean.com/reference/api, "Domain
 * Records"): the zone is the domain, `POST /domains/{zone}/records` with
 * `{ type, name (relative, @ for the apex), data, ttl }` to add, `DELETE
 * /domains/{zone}/records/{id}` to remove (the id kept from the add, else
 * found through `GET /domains/{zone}/records?type=TXT&name=<fqdn>`,
 * following `links.pages.next`). Errors come as `{ id, message }`.
 */
export class DigitalOceanProvider implements DnsProvider {
  readonly name = 'digitalocean';
  readonly #api: JsonApi;
  readonly #ids = new Map<string, number>();

  constructor(options: DigitalOceanOptions) {
    this.#api = new JsonApi({
      provider: 'digitalocean',
      baseUrl: options.baseUrl ?? 'https://api.digitalocean.com/v2',
      headers: { authorization: `Bearer ${options.authToken}` },
      timeoutMs: options.timeoutMs,
    });
  }

  async appendTxt(txt: TxtRecord): Promise<void> {
    const answer = await this.#api.request({
      method: 'POST',
      path: `/domains/${encodeURIComponent(txt.zone)}/records`,
      body: { type: 'TXT', name: txt.relativeName, data: txt.value, ttl: Math.max(MIN_TTL, txt.ttl) },
    });
    const created = record(record(this.#check(`adding TXT ${txt.fqdn}`, answer)).domain_record);
    if (typeof created.id === 'number') this.#ids.set(`${txt.fqdn} ${txt.value}`, created.id);
  }

  async deleteTxt(txt: TxtRecord): Promise<void> {
    const key = `${txt.fqdn} ${txt.value}`;
    const id = this.#ids.get(key) ?? (await this.#find(txt));
    if (id === null) return;
    const answer = await this.#api.request({
      method: 'DELETE',
      path: `/domains/${encodeURIComponent(txt.zone)}/records/${id}`,
    });
    if (answer.status !== 404) this.#check(`deleting TXT ${txt.fqdn}`, answer);
    this.#ids.delete(key);
  }

  async #find(txt: TxtRecord): Promise<number | null> {
    let next: string | null =
      `/domains/${encodeURIComponent(txt.zone)}/records?type=TXT&name=${encodeURIComponent(txt.fqdn)}&per_page=${PER_PAGE}`;
    while (next !== null) {
      const answer = await this.#api.request({ method: 'GET', path: next });
      const body = record(this.#check(`listing TXT ${txt.fqdn}`, answer));
      const match = (Array.isArray(body.domain_records) ? body.domain_records : [])
        .map(record)
        .find((r) => r.type === 'TXT' && r.data === txt.value);
      if (match !== undefined && typeof match.id === 'number') return match.id;
      const link = record(record(body.links).pages).next;
      next = typeof link === 'string' && link !== '' ? link : null;
    }
    return null;
  }

  #check(what: string, answer: ApiAnswer): unknown {
    if (answer.status >= 200 && answer.status < 300) return answer.body;
    const body = record(answer.body);
    const message =
      typeof body.message === 'string' ? `${body.message}${typeof body.id === 'string' ? ` (${body.id})` : ''}` : null;
    throw this.#api.refused(what, answer, message);
  }
}
