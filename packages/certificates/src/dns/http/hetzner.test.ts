import { afterEach, describe, expect, it } from 'vitest';
import { CertificatesErrorCode } from '../../errors.js';
import type { TxtRecord } from '../dns-provider.js';
import { type FakeApi, paginate, startFakeApi } from './fake-api.test-helpers.js';
import { HetznerProvider } from './hetzner.js';

/**
 * A local server answering as Hetzner's DNS API documents it
 * (dns.hetzner.com/api-docs: "Zones: Get All Zones", "Records: Create
 * Record / Get All Records / Delete Record"): the `Auth-API-Token` header
 * (a wrong one: 401 `{ message: "Invalid authentication credentials" }`),
 * relative record names, `{ error: { message, code } }` errors, and record
 * lists paged with `meta.pagination.last_page` — 2 per page here.
 */
const TOKEN = 'hetzner-token-abcdef';

interface HRecord {
  id: string;
  zone_id: string;
  type: string;
  name: string;
  value: string;
  ttl: number;
}

function hetzner(records: HRecord[]): Promise<FakeApi> {
  let next = records.length + 1;
  return startFakeApi('/api/v1', (req) => {
    if (req.headers['auth-api-token'] !== TOKEN) {
      return { status: 401, json: { message: 'Invalid authentication credentials' } };
    }
    const path = req.url.pathname.replace('/api/v1', '');
    const q = req.url.searchParams;
    if (req.method === 'GET' && path === '/zones') {
      const zones = [{ id: 'hz1', name: 'example.com', ttl: 86400 }].filter((z) => z.name === q.get('name'));
      if (zones.length === 0) return { status: 404, json: { error: { message: 'zone not found', code: 404 } } };
      return {
        status: 200,
        json: { zones, meta: { pagination: { page: 1, per_page: 100, last_page: 1, total_entries: 1 } } },
      };
    }
    if (req.method === 'POST' && path === '/records') {
      const body = req.body as Omit<HRecord, 'id'>;
      if (body.zone_id !== 'hz1') {
        return { status: 422, json: { error: { message: '422 Unprocessable Entity: invalid zone_id', code: 422 } } };
      }
      const record = { id: `hr${next++}`, ...body };
      records.push(record);
      return { status: 200, json: { record } };
    }
    if (req.method === 'GET' && path === '/records') {
      const page = Number(q.get('page') ?? '1');
      const { items, pages } = paginate(
        records.filter((r) => r.zone_id === q.get('zone_id')),
        page,
        2,
      );
      return {
        status: 200,
        json: {
          records: items,
          meta: { pagination: { page, per_page: 2, last_page: pages, total_entries: records.length } },
        },
      };
    }
    if (req.method === 'DELETE' && path.startsWith('/records/')) {
      const index = records.findIndex((r) => r.id === path.slice('/records/'.length));
      if (index < 0) return { status: 404, json: { error: { message: 'record not found', code: 404 } } };
      records.splice(index, 1);
      return { status: 200, json: {} };
    }
    return { status: 404, json: { error: { message: 'not found', code: 404 } } };
  });
}

const txt = (value: string): TxtRecord => ({
  zone: 'example.com',
  fqdn: '_acme-challenge.www.example.com',
  relativeName: '_acme-challenge.www',
  value,
  ttl: 60,
});

let api: FakeApi | undefined;
afterEach(async () => {
  await api?.close();
  api = undefined;
});

describe('HetznerProvider against a local DNS API', () => {
  it('adds a relative name in the zone found by name, and deletes its own value, paging through the zone after a restart', async () => {
    const records: HRecord[] = [
      { id: 'a', zone_id: 'hz1', type: 'A', name: 'www', value: '127.0.0.1', ttl: 60 },
      { id: 'b', zone_id: 'hz1', type: 'TXT', name: '_acme-challenge.www', value: 'other', ttl: 60 },
      { id: 'c', zone_id: 'hz1', type: 'MX', name: '@', value: '10 mail', ttl: 60 },
    ];
    api = await hetzner(records);
    await new HetznerProvider({ apiToken: TOKEN, baseUrl: api.baseUrl }).appendTxt(txt('mine'));
    expect(api.requests.find((r) => r.method === 'POST')?.body).toEqual({
      zone_id: 'hz1',
      type: 'TXT',
      name: '_acme-challenge.www',
      value: 'mine',
      ttl: 60,
    });
    await new HetznerProvider({ apiToken: TOKEN, baseUrl: api.baseUrl }).deleteTxt(txt('mine'));
    expect(records.map((r) => r.id)).toEqual(['a', 'b', 'c']);
    const pages = api.requests.filter((r) => r.method === 'GET' && r.url.pathname.endsWith('/records'));
    expect(pages.map((r) => r.url.searchParams.get('page'))).toEqual(['1', '2']);
  });

  it("refuses with Hetzner's error shapes, never the token", async () => {
    api = await hetzner([]);
    const wrong = new HetznerProvider({ apiToken: 'hetzner-wrong-secret', baseUrl: api.baseUrl }).appendTxt(txt('x'));
    await expect(wrong).rejects.toMatchObject({ code: CertificatesErrorCode.DNS_UPDATE_REFUSED });
    await expect(wrong).rejects.toThrow(
      'hetzner: looking up zone example.com: HTTP 401: Invalid authentication credentials',
    );
    await expect(wrong).rejects.not.toThrow('hetzner-wrong-secret');
    const missing = new HetznerProvider({ apiToken: TOKEN, baseUrl: api.baseUrl }).appendTxt({
      ...txt('x'),
      zone: 'example.org',
    });
    await expect(missing).rejects.toThrow('hetzner: looking up zone example.org: HTTP 404: zone not found');
  });
});
