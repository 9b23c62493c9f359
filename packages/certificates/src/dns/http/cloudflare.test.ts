import { afterEach, describe, expect, it } from 'vitest';
import { CertificatesErrorCode } from '../../errors.js';
import type { TxtRecord } from '../dns-provider.js';
import { CloudflareProvider } from './cloudflare.js';
import { type FakeApi, paginate, startFakeApi } from './fake-api.test-helpers.js';

/**
 * A local server answering as Cloudflare's API v4 documents it
 * (developers.cloudflare.com/api, "Zones: List Zones" and "DNS Records for
 * a Zone": list/create/delete): the `{ success, errors, messages, result,
 * result_info }` envelope, Bearer tokens (a wrong one: 403 with error code
 * 10000 "Authentication error"), and record lists paged by `page` — this
 * one caps pages at 2 records, as a server may cap `per_page`.
 */
const TOKEN = 'cf-token-0123456789abcdef';
const PAGE = 2;

interface CfRecord {
  id: string;
  type: string;
  name: string;
  content: string;
  ttl: number;
}

function cloudflare(records: CfRecord[]): Promise<FakeApi> {
  let next = records.length + 1;
  const envelope = (result: unknown, extra: object = {}) => ({
    success: true,
    errors: [],
    messages: [],
    result,
    ...extra,
  });
  const failure = (status: number, code: number, message: string) => ({
    status,
    json: { success: false, errors: [{ code, message }], messages: [], result: null },
  });
  return startFakeApi('/client/v4', (req) => {
    if (req.headers.authorization !== `Bearer ${TOKEN}`) return failure(403, 10000, 'Authentication error');
    const path = req.url.pathname.replace('/client/v4', '');
    if (req.method === 'GET' && path === '/zones') {
      const zones = [{ id: 'zone-1', name: 'example.com', status: 'active' }].filter(
        (z) => z.name === req.url.searchParams.get('name'),
      );
      return {
        status: 200,
        json: envelope(zones, {
          result_info: { page: 1, per_page: 20, count: zones.length, total_count: zones.length, total_pages: 1 },
        }),
      };
    }
    if (!path.startsWith('/zones/zone-1/dns_records'))
      return failure(404, 7003, 'Could not route to /zones, perhaps your object identifier is invalid?');
    if (req.method === 'POST') {
      const body = req.body as Omit<CfRecord, 'id'>;
      if (body.ttl !== 1 && body.ttl < 60)
        return failure(400, 9021, 'Invalid TTL. Must be between 60 and 86400 seconds, or 1 for Automatic.');
      const created = { id: `rec-${next++}`, ...body };
      records.push(created);
      return { status: 200, json: envelope(created) };
    }
    if (req.method === 'GET') {
      const q = req.url.searchParams;
      const matching = records.filter((r) => r.type === q.get('type') && r.name === q.get('name'));
      const page = Number(q.get('page') ?? '1');
      const { items, pages } = paginate(matching, page, PAGE);
      return {
        status: 200,
        json: envelope(items, {
          result_info: { page, per_page: PAGE, count: items.length, total_count: matching.length, total_pages: pages },
        }),
      };
    }
    if (req.method === 'DELETE') {
      const id = path.split('/').pop();
      const index = records.findIndex((r) => r.id === id);
      if (index < 0) return failure(404, 81044, 'Record does not exist.');
      records.splice(index, 1);
      return { status: 200, json: envelope({ id }) };
    }
    return failure(405, 10405, 'Method not allowed');
  });
}

const txt = (value: string): TxtRecord => ({
  zone: 'example.com',
  fqdn: '_acme-challenge.example.com',
  relativeName: '_acme-challenge',
  value,
  ttl: 30,
});

let api: FakeApi | undefined;
afterEach(async () => {
  await api?.close();
  api = undefined;
});

describe('CloudflareProvider against a local API v4', () => {
  it('adds with the zone id and a TTL of at least 60, and deletes its own value, paging to find it after a restart', async () => {
    const records: CfRecord[] = [1, 2, 3].map((n) => ({
      id: `old-${n}`,
      type: 'TXT',
      name: '_acme-challenge.example.com',
      content: `"other-${n}"`,
      ttl: 60,
    }));
    api = await cloudflare(records);
    await new CloudflareProvider({ apiToken: TOKEN, baseUrl: api.baseUrl }).appendTxt(txt('mine'));
    expect(api.requests.find((r) => r.method === 'POST')?.body).toEqual({
      type: 'TXT',
      name: '_acme-challenge.example.com',
      content: 'mine',
      ttl: 60,
    });
    // A new provider (a restart) knows no id: it pages through the records of the name (4 records, 2 a page).
    await new CloudflareProvider({ apiToken: TOKEN, baseUrl: api.baseUrl }).deleteTxt(txt('mine'));
    expect(records.map((r) => r.content)).toEqual(['"other-1"', '"other-2"', '"other-3"']);
    const pages = api.requests.filter((r) => r.method === 'GET' && r.url.pathname.endsWith('/dns_records'));
    expect(pages.map((r) => r.url.searchParams.get('page'))).toEqual(['1', '2']);
  });

  it('deletes by the id kept from the add, without listing', async () => {
    const records: CfRecord[] = [];
    api = await cloudflare(records);
    const provider = new CloudflareProvider({ apiToken: TOKEN, baseUrl: api.baseUrl });
    await provider.appendTxt(txt('a'));
    await provider.appendTxt(txt('b'));
    await provider.deleteTxt(txt('a'));
    expect(records.map((r) => r.content)).toEqual(['b']);
    expect(api.requests.some((r) => r.method === 'GET' && r.url.pathname.endsWith('/dns_records'))).toBe(false);
  });

  it("refuses with Cloudflare's own error, never the token", async () => {
    api = await cloudflare([]);
    const wrong = new CloudflareProvider({ apiToken: 'wrong-token-secret', baseUrl: api.baseUrl }).appendTxt(txt('x'));
    await expect(wrong).rejects.toMatchObject({ code: CertificatesErrorCode.DNS_UPDATE_REFUSED });
    await expect(wrong).rejects.toThrow(
      'cloudflare: looking up zone example.com: HTTP 403: Authentication error (code 10000)',
    );
    await expect(wrong).rejects.not.toThrow('wrong-token-secret');
    expect(api.requests[0]?.headers.authorization).toBe('Bearer wrong-token-secret');
    const other = new CloudflareProvider({ apiToken: TOKEN, baseUrl: api.baseUrl }).appendTxt({
      ...txt('x'),
      zone: 'example.org',
    });
    await expect(other).rejects.toThrow('cloudflare: zone example.org is not in this account');
  });
});
