import { afterEach, describe, expect, it } from 'vitest';
import { CertificatesErrorCode } from '../../errors.js';
import type { TxtRecord } from '../dns-provider.js';
import { DigitalOceanProvider } from './digitalocean.js';
import { type FakeApi, paginate, startFakeApi } from './fake-api.test-helpers.js';

/**
 * A local server answering as DigitalOcean's API v2 documents it
 * (docs.digitalocean.com/reference/api, "Domain Records": create, list with
 * `type` and `name` filters, delete): Bearer tokens (a wrong one: 401
 * `{ id: "Unauthorized", message }`), 201 `{ domain_record }` on create,
 * 204 on delete, `{ id, message }` errors, and lists paged through
 * `links.pages.next` — 2 per page here.
 */
const TOKEN = 'do-token-fedcba';

interface DoRecord {
  id: number;
  type: string;
  name: string;
  data: string;
  ttl: number;
}

function digitalocean(records: DoRecord[]): Promise<FakeApi> {
  let next = 1000;
  let origin = '';
  const api = startFakeApi('/v2', (req) => {
    origin = req.url.origin;
    if (req.headers.authorization !== `Bearer ${TOKEN}`) {
      return { status: 401, json: { id: 'Unauthorized', message: 'Unable to authenticate you' } };
    }
    const base = '/v2/domains/example.com/records';
    const path = req.url.pathname;
    if (!path.startsWith(base)) {
      return {
        status: 404,
        json: { id: 'not_found', message: 'The resource you were accessing could not be found.' },
      };
    }
    if (req.method === 'POST') {
      const body = req.body as Omit<DoRecord, 'id'>;
      if (body.ttl < 30)
        return { status: 422, json: { id: 'unprocessable_entity', message: 'TTL must be at least 30.' } };
      const record = { id: next++, ...body };
      records.push(record);
      return { status: 201, json: { domain_record: record } };
    }
    if (req.method === 'GET') {
      const q = req.url.searchParams;
      // DigitalOcean filters `name` by the fully qualified name; records keep it relative.
      const matching = records.filter((r) => r.type === q.get('type') && `${r.name}.example.com` === q.get('name'));
      const page = Number(q.get('page') ?? '1');
      const { items, pages } = paginate(matching, page, 2);
      const link = (p: number) => `${origin}${base}?type=TXT&name=${q.get('name')}&page=${p}&per_page=2`;
      return {
        status: 200,
        json: {
          domain_records: items,
          links: { pages: page < pages ? { next: link(page + 1), last: link(pages) } : {} },
          meta: { total: matching.length },
        },
      };
    }
    if (req.method === 'DELETE') {
      const index = records.findIndex((r) => String(r.id) === path.slice(base.length + 1));
      if (index < 0) {
        return {
          status: 404,
          json: { id: 'not_found', message: 'The resource you were accessing could not be found.' },
        };
      }
      records.splice(index, 1);
      return { status: 204 };
    }
    return { status: 405, json: { id: 'method_not_allowed', message: 'Method Not Allowed' } };
  });
  return api;
}

const txt = (value: string): TxtRecord => ({
  zone: 'example.com',
  fqdn: '_acme-challenge.shop.example.com',
  relativeName: '_acme-challenge.shop',
  value,
  ttl: 10,
});

let api: FakeApi | undefined;
afterEach(async () => {
  await api?.close();
  api = undefined;
});

describe('DigitalOceanProvider against a local API v2', () => {
  it('adds a relative name with a TTL of at least 30, and finds its own value through the next links after a restart', async () => {
    const records: DoRecord[] = [1, 2, 3].map((n) => ({
      id: n,
      type: 'TXT',
      name: '_acme-challenge.shop',
      data: `other-${n}`,
      ttl: 30,
    }));
    api = await digitalocean(records);
    await new DigitalOceanProvider({ authToken: TOKEN, baseUrl: api.baseUrl }).appendTxt(txt('mine'));
    expect(api.requests.find((r) => r.method === 'POST')?.body).toEqual({
      type: 'TXT',
      name: '_acme-challenge.shop',
      data: 'mine',
      ttl: 30,
    });
    await new DigitalOceanProvider({ authToken: TOKEN, baseUrl: api.baseUrl }).deleteTxt(txt('mine'));
    expect(records.map((r) => r.data)).toEqual(['other-1', 'other-2', 'other-3']);
    const lists = api.requests.filter((r) => r.method === 'GET');
    expect(lists.map((r) => r.url.searchParams.get('page') ?? '1')).toEqual(['1', '2']);
  });

  it("refuses with DigitalOcean's { id, message }, never the token", async () => {
    api = await digitalocean([]);
    const wrong = new DigitalOceanProvider({ authToken: 'do-wrong-secret', baseUrl: api.baseUrl }).appendTxt(txt('x'));
    await expect(wrong).rejects.toMatchObject({ code: CertificatesErrorCode.DNS_UPDATE_REFUSED });
    await expect(wrong).rejects.toThrow(
      'digitalocean: adding TXT _acme-challenge.shop.example.com: HTTP 401: Unable to authenticate you (Unauthorized)',
    );
    await expect(wrong).rejects.not.toThrow('do-wrong-secret');
    const missing = new DigitalOceanProvider({ authToken: TOKEN, baseUrl: api.baseUrl }).appendTxt({
      ...txt('x'),
      zone: 'example.org',
    });
    await expect(missing).rejects.toThrow('HTTP 404: The resource you were accessing could not be found. (not_found)');
  });
});
