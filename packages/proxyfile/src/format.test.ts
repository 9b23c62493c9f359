import { describe, expect, it } from 'vitest';
import { format, isFormatted } from './index.js';

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
});
