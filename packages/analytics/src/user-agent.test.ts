import { describe, expect, it } from 'vitest';
import { classifyUserAgent, MAX_USER_AGENT_LENGTH, UNKNOWN, UserAgentCache } from './user-agent.js';
import { UA } from './user-agents.test-helpers.js';

describe('classifyUserAgent', () => {
  it.each([
    ['chromeWindows', 'Chrome', 'Windows', 'desktop'],
    ['firefoxLinux', 'Firefox', 'Linux', 'desktop'],
    ['safariMac', 'Safari', 'macOS', 'desktop'],
    ['safariIphone', 'Safari', 'iOS', 'mobile'],
    ['safariIpad', 'Safari', 'iOS', 'tablet'],
    ['chromeAndroid', 'Chrome', 'Android', 'mobile'],
    ['chromeAndroidTablet', 'Chrome', 'Android', 'tablet'],
    ['edgeWindows', 'Microsoft Edge', 'Windows', 'desktop'],
    ['chromebook', 'Chrome', 'Chrome OS', 'desktop'],
    ['smartTv', 'Samsung Internet for Android', 'Tizen', 'other'],
  ] as const)('%s: a person on %s, %s, %s', (name, browser, os, device) => {
    const info = classifyUserAgent(UA[name]);
    expect({ bot: info.bot, browser: info.browser, os: info.os, device: info.device }).toEqual({
      bot: false,
      browser,
      os,
      device,
    });
  });

  it.each(['googlebot', 'bingbot', 'headlessChrome', 'curl', 'pythonRequests'] as const)('%s is a bot', (name) => {
    expect(classifyUserAgent(UA[name]).bot).toBe(true);
  });

  it('a missing or empty header is a bot of unknown browser and OS', () => {
    for (const header of [undefined, '']) {
      expect(classifyUserAgent(header)).toMatchObject({ bot: true, browser: UNKNOWN, os: UNKNOWN, device: 'other' });
    }
  });

  it('cuts a long header before parsing: the same result as its first 512 characters', () => {
    const long = `${UA.firefoxLinux} ${'x'.repeat(10_000)}`;
    const info = classifyUserAgent(long);
    expect(info).toEqual(classifyUserAgent(long.slice(0, MAX_USER_AGENT_LENGTH)));
    expect(info.browser).toBe('Firefox');
  });
});

describe('UserAgentCache', () => {
  it('parses each distinct header once while it stays in use', () => {
    const cache = new UserAgentCache(16);
    for (let i = 0; i < 100; i++) {
      expect(cache.get(UA.chromeWindows).browser).toBe('Chrome');
      expect(cache.get(UA.safariIphone).device).toBe('mobile');
    }
    expect(cache.parses).toBe(2);
    expect(cache.get(undefined).bot).toBe(true);
    expect(cache.parses).toBe(2);
  });

  it('stays within its size under many distinct headers, and keeps the header in use parsed', () => {
    const cache = new UserAgentCache(64);
    for (let i = 0; i < 10_000; i++) {
      cache.get(`${UA.firefoxLinux} build/${i}`);
      cache.get(UA.chromeWindows);
      expect(cache.size).toBeLessThanOrEqual(64);
    }
    expect(cache.parses).toBe(10_001);
  });

  it('keys a long header by its cut form: a flood of long variants stays bounded in memory', () => {
    const cache = new UserAgentCache(8);
    const prefix = 'y'.repeat(MAX_USER_AGENT_LENGTH);
    for (let i = 0; i < 100; i++) cache.get(`${prefix}${i}`);
    expect(cache.parses).toBe(1);
  });
});
