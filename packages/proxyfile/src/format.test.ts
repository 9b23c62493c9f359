import { describe, expect, it } from 'vitest';
import { format, isFormatted, parse } from './index.js';

describe('format', () => {
  it('indents with tabs, single spaces, keeps comments and quoting, trims blank lines inside braces', () => {
    const messy = [
      '',
      '{',
      '    http_port    8080   # local',
      '}',
      '',
      '',
      '',
      'a.example.com,   b.example.com {',
      '',
      '  # the app',
      '        reverse_proxy  127.0.0.1:3000   `raw "x"` {',
      '   lb_policy first',
      '',
      '}',
      '  respond "a  b"   200',
      '',
      '}',
    ].join('\r\n');
    expect(format(messy)).toBe(
      [
        '{',
        '\thttp_port 8080 # local',
        '}',
        '',
        'a.example.com, b.example.com {',
        '\t# the app',
        '\treverse_proxy 127.0.0.1:3000 `raw "x"` {',
        '\t\tlb_policy first',
        '\t}',
        '\trespond "a  b" 200',
        '}',
        '',
      ].join('\n'),
    );
  });

  it('leaves env placeholders and multi-line strings untouched', () => {
    const text = '{$HOST} {\n\trespond "line one\n  line two" {$CODE:200}\n}\n';
    expect(format(text)).toBe(text);
    expect(isFormatted(text)).toBe(true);
  });

  it('reports unformatted text', () => {
    expect(isFormatted('a.test {\n  respond\n}\n')).toBe(false);
    expect(format('')).toBe('');
  });

  it('keeps the certificate options and their block forms', () => {
    const messy = [
      '{',
      '  acme_ca   https://acme.test/dir',
      '  acme_ca http://localhost:14000/dir',
      '      acme_ca_root /ca.pem',
      ' acme_eab {',
      'key_id kid-1',
      '',
      '    mac_key   c2VjcmV0LWhtYWMta2V5',
      '  }',
      '  on_demand_tls {',
      '    ask http://127.0.0.1:5555/allowed',
      '}',
      '  key_type rsa2048',
      '  auto_https   disable_redirects',
      '}',
      'a.test {',
      '  tls   internal {',
      '  on_demand',
      '  }',
      '  respond',
      '}',
    ].join('\n');
    const canonical = [
      '{',
      '\tacme_ca https://acme.test/dir',
      '\tacme_ca http://localhost:14000/dir',
      '\tacme_ca_root /ca.pem',
      '\tacme_eab {',
      '\t\tkey_id kid-1',
      '',
      '\t\tmac_key c2VjcmV0LWhtYWMta2V5',
      '\t}',
      '\ton_demand_tls {',
      '\t\task http://127.0.0.1:5555/allowed',
      '\t}',
      '\tkey_type rsa2048',
      '\tauto_https disable_redirects',
      '}',
      'a.test {',
      '\ttls internal {',
      '\t\ton_demand',
      '\t}',
      '\trespond',
      '}',
      '',
    ].join('\n');
    expect(format(messy)).toBe(canonical);
    expect(parse(canonical)).toEqual(parse(messy));
  });

  it('keeps docker off and the docker block', () => {
    for (const [messy, canonical] of [
      ['{\n  docker    off  # no discovery\n}\n', '{\n\tdocker off # no discovery\n}\n'],
      [
        '{\r\ndocker {\r\n\r\n    host   unix:///run/podman/podman.sock\r\n  network "proxy_net"\r\n\r\n   }\r\n}',
        '{\n\tdocker {\n\t\thost unix:///run/podman/podman.sock\n\t\tnetwork "proxy_net"\n\t}\n}\n',
      ],
    ] as const) {
      expect(format(messy)).toBe(canonical);
      expect(isFormatted(canonical)).toBe(true);
      expect(parse(canonical)).toEqual(parse(messy));
    }
    expect(parse('{\n\tdocker off\n}\n').global.docker).toEqual({ enabled: false, host: null, network: null });
    expect(parse('{\n\tdocker {\n\t\tnetwork "proxy_net"\n\t}\n}\n').global.docker).toEqual({
      enabled: true,
      host: null,
      network: 'proxy_net',
    });
  });
});
