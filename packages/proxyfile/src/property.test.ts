import { Config } from '@proxyd/model';
import fc from 'fast-check';
import { Value } from 'typebox/value';
import { describe, expect, it } from 'vitest';
import { format, parse } from './index.js';
import { generated, optionsFor } from './property.test-helpers.js';

// Property tests: generated valid Proxyfiles parse; format is idempotent and
// keeps the meaning. The long fuzz runs (random and mutated text) are in
// property.stress.test.ts.

describe('property: generated valid Proxyfiles', () => {
  it('parse into a model that validates against the Config schema', () => {
    fc.assert(
      fc.property(generated, (g) => {
        const config = parse(g.text, optionsFor(g));
        expect(Value.Check(Config, config)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('format is idempotent', () => {
    fc.assert(
      fc.property(generated, ({ text }) => {
        const once = format(text);
        expect(format(once)).toBe(once);
      }),
      { numRuns: 500 },
    );
  });

  it('parse(format(x)) equals parse(x), imported files, snippets and {$VAR} included', () => {
    fc.assert(
      fc.property(generated, (g) => {
        const options = optionsFor(g);
        expect(parse(format(g.text), options)).toEqual(parse(g.text, options));
      }),
      { numRuns: 500 },
    );
  });

  it('the generator reaches every form it claims to', () => {
    const seen = new Set<string>();
    const probes: [string, RegExp][] = [
      ['snippet', /^\s*\(part\d+\) \{/m],
      ['file import', /import parts\//],
      ['glob import', /import globbed\/\*\.conf/],
      ['site in a file', /import sites\//],
      ['env site', /\{\$SITE_\d+\}/],
      ['http:// site', /http:\/\/[a-z]/],
      ['port site', /\.test:9\d{3}/],
      ['IPv6 site', /\[fd00::1\]:9099/],
      ['IPv6 upstream', /\[fd00::2\]:\d+/],
      ['to', /^\s*to\s/m],
      ['transport tls', /transport\s+tls/],
      ['header -X', /header\s+-X/],
      ['basic_auth without realm', /basic_?auth(?:\s+bcrypt)?\s+\{/],
      ['acme_ca list', /acme_ca\s+https:[\s\S]*acme_ca\s+http:/],
      ['acme_eab line', /acme_eab\s+kid-1/],
      ['acme_eab block', /acme_eab\s+\{/],
      ['key_type', /key_type\s+rsa2048/],
      ['auto_https', /auto_https\s+disable_certs/],
      ['on_demand_tls', /on_demand_tls\s+\{/],
      ['docker off', /docker\s+off/],
      ['docker { host, network }', /docker\s+\{[^}]*host\s+unix:[^}]*network\s+proxy_net/],
      ['docker { network, host }', /docker\s+\{[^}]*network\s+web\.1[^}]*host\s+tcp:/],
      ['tls { on_demand }', /^\s*tls\s+\{/m],
      ['tls internal { on_demand }', /tls\s+internal\s+\{/],
      ['client_ip matcher', /client_ip\s+private_ranges/],
      ['remote_ip matcher', /remote_ip\s+127/],
      ['not line', /not\s+client_ip/],
      ['not block', /not\s+\{/],
      ['host matcher', /host\s+a\.test/],
      ['query matcher', /query\s+format=json/],
      ['path_regexp', /path_regexp\s+u/],
      ['header_regexp', /header_regexp\s+Cookie/],
      ['abort @name', /abort\s+@m/],
      ['respond @name', /respond\s+@m\d\s+"no/],
      ['rewrite with a path matcher', /rewrite\s+\/old/],
      ['rewrite without a matcher', /rewrite\s+\/v2/],
      ['uri strip_prefix', /uri\s+strip_prefix/],
      ['uri path_regexp', /uri\s+path_regexp/],
      ['try_files SPA', /try_files\s+\{path\}\s+\{path\}\//],
      ['try_files =404 { policy }', /try_files\s+\S+\s+=404\s+\{/],
      ['handle_errors 5xx', /handle_errors\s+5xx/],
      ['handle_errors for every error', /handle_errors\s+\{/],
      ['forward_auth authelia', /forward_auth\s+authelia:9091/],
      ['forward_auth copy_headers block', /copy_headers\s+\{/],
      ['header_down', /header_down\s+-Server/],
      ['flush_interval -1', /flush_interval\s+-1/],
      ['stream_timeout', /stream_timeout\s+\S/],
      ['read_timeout', /read_timeout\s+5m/],
      ['lb_policy cookie with a secret', /lb_policy\s+cookie\s+srv\s+key/],
      ['lb_retries', /lb_retries\s+\d/],
      ['lb_try_duration', /lb_try_duration\s+\S/],
      ['import with arguments', /import\s+part\d+\s+X-Part/],
      ['transport versions', /versions\s+h2c\s+2/],
    ];
    fc.assert(
      fc.property(generated, (g) => {
        const all = [g.text, ...Object.values(g.files)].join('\n');
        for (const [name, re] of probes) if (re.test(all)) seen.add(name);
      }),
      { numRuns: 300 },
    );
    expect([...seen].sort()).toEqual(probes.map(([name]) => name).sort());
  });
});
