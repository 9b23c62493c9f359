import { afterEach, describe, expect, it } from 'vitest';
import { CertificatesErrorCode } from '../../errors.js';
import type { TxtRecord } from '../dns-provider.js';
import { DesecProvider } from './desec.js';
import { type FakeApi, startFakeApi } from './fake-api.test-helpers.js';

/**
 * A local server answering as deSEC's API documents it
 * (desec.readthedocs.io, "Retrieving and Creating DNS Records",
 * "Modifying an RRset", "Rate Limits"): `Authorization: Token …` (a wrong
 * one: 401 `{ detail: "Invalid token." }`), one RRset per subname and type
 * (404 `{ detail: "Not found." }` when none; `@` names the apex in the
 * URL), quoted TXT values, a domain minimum TTL of 3600 (400 with a field
 * error list below it), a PATCH with no records deleting the RRset (204),
 * and 429 with `Retry-After` when throttled. The provider addresses one
 * RRset by name, so it never lists (deSEC's cursor pagination is not used).
 */
const TOKEN = 'desec-token-123456';

interface RRset {
  subname: string;
  type: string;
  records: string[];
  ttl: number;
}

function desec(rrsets: Map<string, RRset>, throttleFirst = false): Promise<FakeApi> {
  let throttle = throttleFirst;
  return startFakeApi('/api/v1', (req) => {
    if (req.headers.authorization !== `Token ${TOKEN}`) return { status: 401, json: { detail: 'Invalid token.' } };
    if (throttle) {
      throttle = false;
      return {
        status: 429,
        headers: { 'retry-after': '1' },
        json: { detail: 'Request was throttled. Expected available in 1 second.' },
      };
    }
    const match = /^\/api\/v1\/domains\/example\.com\/rrsets\/(?:([^/]*)\/TXT\/)?$/.exec(req.url.pathname);
    if (match === null) return { status: 404, json: { detail: 'Not found.' } };
    const subname =
      match[1] === undefined ? undefined : decodeURIComponent(match[1]) === '@' ? '' : decodeURIComponent(match[1]);
    if (req.method === 'POST' && subname === undefined) {
      const body = req.body as RRset;
      if (body.ttl < 3600)
        return { status: 400, json: { ttl: ['Ensure this value is greater than or equal to 3600.'] } };
      if (rrsets.has(body.subname)) {
        return {
          status: 400,
          json: { non_field_errors: ['Another RRset with the same subdomain and type exists for this domain.'] },
        };
      }
      rrsets.set(body.subname, body);
      return { status: 201, json: body };
    }
    if (subname === undefined) return { status: 405, json: { detail: 'Method "GET" not allowed.' } };
    const rrset = rrsets.get(subname);
    if (rrset === undefined) return { status: 404, json: { detail: 'Not found.' } };
    if (req.method === 'GET') return { status: 200, json: rrset };
    if (req.method === 'PATCH') {
      const { records } = req.body as { records: string[] };
      if (records.length === 0) {
        rrsets.delete(subname);
        return { status: 204 };
      }
      rrset.records = records;
      return { status: 200, json: rrset };
    }
    return { status: 405, json: { detail: `Method "${req.method}" not allowed.` } };
  });
}

const txt = (value: string, relativeName = '_acme-challenge'): TxtRecord => ({
  zone: 'example.com',
  fqdn: relativeName === '@' ? 'example.com' : `${relativeName}.example.com`,
  relativeName,
  value,
  ttl: 60,
});

let api: FakeApi | undefined;
afterEach(async () => {
  await api?.close();
  api = undefined;
});

describe('DesecProvider against a local deSEC API', () => {
  it('creates the RRset with a quoted value and TTL 3600, adds a second value, removes each, and the last removal deletes the RRset', async () => {
    const rrsets = new Map<string, RRset>();
    api = await desec(rrsets);
    const provider = new DesecProvider({ token: TOKEN, baseUrl: api.baseUrl });
    await provider.appendTxt(txt('one'));
    expect(rrsets.get('_acme-challenge')).toEqual({
      subname: '_acme-challenge',
      type: 'TXT',
      records: ['"one"'],
      ttl: 3600,
    });
    await provider.appendTxt(txt('two'));
    expect(rrsets.get('_acme-challenge')?.records).toEqual(['"one"', '"two"']);
    await provider.deleteTxt(txt('one'));
    expect(rrsets.get('_acme-challenge')?.records).toEqual(['"two"']);
    await provider.deleteTxt(txt('two'));
    expect(rrsets.has('_acme-challenge')).toBe(false);
  });

  it('waits out a 429 once, after its Retry-After', async () => {
    const rrsets = new Map<string, RRset>();
    api = await desec(rrsets, true);
    const started = Date.now();
    await new DesecProvider({ token: TOKEN, baseUrl: api.baseUrl }).appendTxt(txt('late'));
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
    expect(rrsets.get('_acme-challenge')?.records).toEqual(['"late"']);
  });

  it("refuses with deSEC's detail, never the token", async () => {
    api = await desec(new Map());
    const wrong = new DesecProvider({ token: 'desec-wrong-secret', baseUrl: api.baseUrl }).appendTxt(txt('x'));
    await expect(wrong).rejects.toMatchObject({ code: CertificatesErrorCode.DNS_UPDATE_REFUSED });
    await expect(wrong).rejects.toThrow('desec: reading TXT _acme-challenge.example.com: HTTP 401: Invalid token.');
    await expect(wrong).rejects.not.toThrow('desec-wrong-secret');
  });
});
