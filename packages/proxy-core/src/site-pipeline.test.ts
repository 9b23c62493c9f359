import { randomBytes } from 'node:crypto';
import { defaultReverseProxy, emptySite, SITE_DIRECTIVES, SITE_STEP_ORDER, type Site } from '@proxyd/model';
import { describe, expect, it } from 'vitest';
import { CacheRegistry } from './cache/response-cache.js';
import type { Forwarder } from './pipeline.js';
import { compileSite } from './site-handler.js';

const forwarder: Forwarder = { forward: () => {}, upgrade: () => {}, caches: new CacheRegistry() };

function site(edit: (s: Site) => void): Site {
  const s = emptySite([{ scheme: 'http', host: 'app.test', port: null }]);
  edit(s);
  return s;
}

function stepsOf(s: Site): readonly string[] {
  return compileSite(s, { forwarder, secret: randomBytes(32) }).steps;
}

describe('the site pipeline', () => {
  it('compiles only the steps a site uses: a plain reverse_proxy site has one step at request time', () => {
    const plain = site((s) => {
      s.handler = defaultReverseProxy([{ host: '127.0.0.1', port: 8080 }]);
    });
    expect(stepsOf(plain)).toEqual(['headers', 'handle', 'terminal']);
  });

  it('runs every step in SITE_STEP_ORDER (after the front door) when the site uses them all', () => {
    const all = site((s) => {
      s.under_attack = { enabled: true, difficulty: 4 };
      s.rate_limit = 10;
      s.basic_auth = {
        realm: 'staff',
        users: [{ user: 'ann', hash: '$2a$04$invalidinvalidinvalidinvalidinvalidinvalidinvalidinv' }],
      };
      s.redirects = [{ from: '/old', to: '/new', status: 301 }];
      s.rewrites = [{ path: '/a', to: '/b' }];
      s.forward_auth = { upstreams: [{ host: '127.0.0.1', port: 9 }], tls: false, uri: '/auth', copy_headers: [] };
      s.handles = [{ kind: 'handle', path: '/api/*', header: [], basic_auth: null, redirects: [], handler: null }];
      s.cache = { max_size_bytes: 1024, ttl_ms: 1000 };
      s.encode = { encodings: ['gzip'], minimum_length: 512 };
      s.handler = defaultReverseProxy([{ host: '127.0.0.1', port: 8080 }]);
    });
    expect(stepsOf(all)).toEqual(SITE_STEP_ORDER.filter((step) => step !== 'front_door'));
  });

  it('has no cache step when no handler of the site forwards', () => {
    const files = site((s) => {
      s.cache = { max_size_bytes: 1024, ttl_ms: 1000 };
      s.handler = { kind: 'respond', status: 200, body: 'ok' };
    });
    expect(stepsOf(files)).toEqual(['headers', 'handle', 'terminal']);
  });
});

describe('README "Directive order"', () => {
  it('lists SITE_STEP_ORDER and SITE_DIRECTIVES', async () => {
    const { readFile } = await import('node:fs/promises');
    const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8');
    const section = readme.slice(readme.indexOf('### Directive order'), readme.indexOf('**Handle selection**'));
    const rows = section.split('\n').filter((line) => /^\| \d/.test(line));
    const steps = rows.map((row) => /^\| \d+\s+\| `([a-z_]+)`/.exec(row)?.[1]);
    expect(steps).toEqual([...SITE_STEP_ORDER]);
    for (const { name, step } of SITE_DIRECTIVES) {
      const row = rows[SITE_STEP_ORDER.indexOf(step)] ?? '';
      expect(row.split('|')[3], `${name} in the ${step} row`).toContain(`\`${name}\``);
    }
  });
});
