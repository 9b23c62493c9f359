import { describe, expect, it } from 'vitest';
import { httpsLocation, httpsPortSuffix, wantsHttps } from './redirect.js';

// Which routes are HTTPS sites, and which names get certificates: the model's `autoHttpsFor` (auto-https.test.ts).

describe('wantsHttps', () => {
  it.each([
    // httpsSite, sitePort, certificate available, HTTPS listener open, redirect
    [true, null, true, true, true],
    [true, null, false, true, false],
    [true, null, true, false, false],
    [true, null, false, false, false],
    [true, 9002, true, true, false],
    [true, 0, true, true, false],
    [false, null, true, true, false],
    [false, null, false, false, false],
  ] as const)(
    'httpsSite %s, site port %s, certificate %s, listener %s: %s',
    (httpsSite, sitePort, cert, open, want) => {
      expect(wantsHttps({ httpsSite, sitePort }, cert, open)).toBe(want);
    },
  );
});

describe('httpsLocation', () => {
  it('names the https_port unless it is 443, and brackets IPv6 hosts', () => {
    expect(httpsLocation('a.test', httpsPortSuffix(443), '/p?q=1')).toBe('https://a.test/p?q=1');
    expect(httpsLocation('a.test', httpsPortSuffix(undefined), '/')).toBe('https://a.test/');
    expect(httpsLocation('a.test', httpsPortSuffix(8443), '/p')).toBe('https://a.test:8443/p');
    expect(httpsLocation('::1', httpsPortSuffix(8443), '/')).toBe('https://[::1]:8443/');
  });
});
