import { Config } from '@proxyd/proxy-core/model';
import { Value } from '@sinclair/typebox/value';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { format, ProxyfileError, parse } from './index.js';

// Property tests: generated valid Proxyfiles (random spacing, comments, blank
// lines, quoting) parse; format is idempotent and keeps the meaning; random
// and mutated text only ever throws ProxyfileError, quickly.

interface Node {
  tokens: readonly string[];
  block?: readonly Node[];
}

const HASH = '$2b$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy';
const label = fc.stringMatching(/^[a-z][a-z0-9-]{0,6}[a-z0-9]$/);
const host = fc.constantFrom('127.0.0.1', '10.0.0.2', 'backend.internal', '[::1]', 'app');
const port = fc.integer({ min: 1, max: 65535 });
const upstream = fc
  .tuple(fc.constantFrom('', 'http://', 'https://'), host, port)
  .map(([scheme, h, p]) => `${scheme}${h}:${p}`);
const duration = fc.constantFrom('500ms', '10s', '1m', '1m30s', '2h', '0');
const quote = (s: string) => fc.constantFrom(s, `"${s}"`);
const headerName = fc.constantFrom('X-Frame-Options', 'X-Test', 'Cache-Control', 'Server', 'X-A');
const headerValue = fc.constantFrom('DENY', '"a b c"', 'no-store', '"x # y"', '`raw "v"`');

const pool = fc.array(upstream, { minLength: 1, maxLength: 3 }).filter((us) => {
  const schemes = new Set(us.map((u) => (u.startsWith('https://') ? 's' : u.startsWith('http://') ? 'p' : 'n')));
  return !(schemes.has('s') && schemes.has('p'));
});

const reverseProxy: fc.Arbitrary<Node> = fc
  .tuple(
    pool,
    fc.subarray([
      fc.constantFrom('round_robin', 'least_conn', 'random', 'ip_hash', 'first').map((p) => ['lb_policy', p]),
      fc.constant(['health_uri', '/health']),
      duration.filter((d) => d !== '0').map((d) => ['health_interval', d]),
      duration.filter((d) => d !== '0').map((d) => ['health_timeout', d]),
      duration.map((d) => ['fail_duration', d]),
      fc.constant(['header_up', 'X-Up', '"v"']),
      fc.constant(['header_up', '-X-Down']),
    ]),
  )
  .chain(([ups, optsArbs]) =>
    fc.tuple(fc.constant(ups), optsArbs.length ? fc.tuple(...optsArbs) : fc.constant([] as string[][])),
  )
  .map(([ups, opts]) => {
    const node: Node = { tokens: ['reverse_proxy', ...ups] };
    if (opts.length > 0) node.block = opts.map((tokens) => ({ tokens }));
    return node;
  });

const handler: fc.Arbitrary<readonly Node[]> = fc.oneof(
  reverseProxy.map((n) => [n]),
  fc.constantFrom(
    [{ tokens: ['respond', '"hello"', '200'] }],
    [{ tokens: ['respond', '204'] }],
    [{ tokens: ['respond'] }],
    [{ tokens: ['root', '*', '/srv/www'] }, { tokens: ['file_server'] }],
  ),
);

const middle: fc.Arbitrary<readonly Node[]> = fc
  .tuple(
    fc.option(headerName.chain((n) => headerValue.map((v) => ({ tokens: ['header', n, v] })))),
    fc.option(
      fc
        .array(fc.tuple(fc.constantFrom('', '+', '-'), headerName, headerValue), { minLength: 1, maxLength: 3 })
        .map((ops) => ({
          tokens: ['header'],
          block: ops.map(([op, n, v]) => ({ tokens: op === '-' ? [`-${n}`] : [`${op}${n}`, v] })),
        })),
    ),
    fc.option(quote('Realm').map((r) => ({ tokens: ['basic_auth', r], block: [{ tokens: ['alice', HASH] }] }))),
    fc.array(
      fc.constantFrom(
        ['redir', '/old/*', '/new/{http.request.uri.path.remainder}', '301'],
        ['redir', '/a', '/b', '308'],
        ['redir', 'https://example.com', '302'],
      ),
      { maxLength: 2 },
    ),
  )
  .map(([h1, h2, auth, redirs]) => [
    ...(h1 ? [h1] : []),
    ...(h2 ? [h2] : []),
    ...(auth ? [auth] : []),
    ...redirs.map((tokens) => ({ tokens })),
  ]);

const siteOnly: fc.Arbitrary<readonly Node[]> = fc
  .subarray([
    fc.integer({ min: 1, max: 10_000 }).map((n) => ({ tokens: ['rate_limit', `${n}/s`] })),
    fc.constantFrom(['auto'], ['off'], ['internal'], ['/c.pem', '/k.pem']).map((a) => ({ tokens: ['tls', ...a] })),
    fc.constantFrom<Node>(
      { tokens: ['cache'] },
      { tokens: ['cache'], block: [{ tokens: ['max_size', '10MB'] }, { tokens: ['ttl', '30s'] }] },
    ),
    fc.constantFrom<Node>(
      { tokens: ['under_attack'] },
      { tokens: ['under_attack', 'off'] },
      { tokens: ['under_attack', 'on'], block: [{ tokens: ['difficulty', '20'] }] },
    ),
    fc.constant<Node>({ tokens: ['analytics', 'off'] }),
  ])
  .chain((arbs) => (arbs.length ? fc.tuple(...arbs) : fc.constant([] as Node[])));

const handles: fc.Arbitrary<readonly Node[]> = fc
  .uniqueArray(fc.constantFrom('/api/*', '/static/*', '/health', '*.php', null), { maxLength: 3 })
  .chain((patterns) =>
    patterns.length
      ? fc.tuple(
          ...patterns.map((p) =>
            fc.tuple(fc.boolean(), middle, handler).map(([strip, mid, h]): Node => {
              const kind = p?.startsWith('/') && strip ? 'handle_path' : 'handle';
              return { tokens: p === null ? [kind] : [kind, p], block: [...mid, ...h] };
            }),
          ),
        )
      : fc.constant([] as Node[]),
  );

const site = (domains: string[]): fc.Arbitrary<Node> =>
  fc.tuple(siteOnly, middle, handles, handler, fc.boolean()).chain(([so, mid, hs, h, shuffle]) => {
    const body = [...so, ...mid, ...hs, ...h];
    return (shuffle ? fc.shuffledSubarray(body, { minLength: body.length }) : fc.constant(body)).map(
      (b): Node => ({ tokens: domains.map((d, i) => (i < domains.length - 1 ? `${d},` : d)), block: b }),
    );
  });

const globalBlock: fc.Arbitrary<Node | null> = fc.option(
  fc
    .subarray([
      ['http_port', '8080'],
      ['https_port', '8443'],
      ['email', 'ops@example.com'],
      ['admin', '127.0.0.1:6190'],
      ['acme_ca', 'https://acme.test/dir'],
      ['state_dir', '/var/lib/proxyd'],
      ['trusted_proxies', '10.0.0.0/8', 'private_ranges'],
      ['geoip_db', '/geo.mmdb'],
    ])
    .map((opts): Node => ({ tokens: ['{'], block: opts.map((tokens) => ({ tokens })) })),
);

const document: fc.Arbitrary<readonly Node[]> = fc
  .uniqueArray(
    fc.tuple(label, label).map(([a, b]) => `${a}.${b}.test`),
    { minLength: 1, maxLength: 4 },
  )
  .chain((domains) =>
    fc.tuple(globalBlock, fc.tuple(...domains.map((d, i) => site(i === 0 ? [d, `*.w${i}.${d}`] : [d])))),
  )
  .map(([g, sites]) => [...(g ? [g] : []), ...sites]);

/** Renders nodes with spacing taken from `style` (cycled): indentation, separators, comments, blank lines. */
function render(nodes: readonly Node[], style: number[]): string {
  let k = 0;
  const pick = <T>(options: readonly T[]): T => options[(style[k++ % style.length] as number) % options.length] as T;
  const out: string[] = [];
  const walk = (list: readonly Node[], depth: number) => {
    for (const n of list) {
      if (pick([0, 0, 0, 1, 2]) === 1) out.push('');
      if (pick([0, 0, 0, 0, 1]) === 1) out.push(`${pick(['', '  ', '\t'])}# a comment { with } "braces"`);
      const indent = pick(['\t'.repeat(depth), '  '.repeat(depth), '', ' '.repeat(depth * 3)]);
      const sep = () => pick([' ', ' ', '\t', '   ']);
      const isGlobal = n.tokens.length === 1 && n.tokens[0] === '{' && n.block !== undefined;
      let line = isGlobal ? '' : n.tokens.join(sep());
      if (n.block !== undefined) line = isGlobal ? '{' : `${line}${sep()}{`;
      if (pick([0, 0, 0, 1]) === 1) line += `${sep()}# trailing`;
      out.push(indent + line + pick(['', '', ' ', '\t']));
      if (n.block !== undefined) {
        walk(n.block, depth + 1);
        out.push(`${indent}}`);
      }
    }
  };
  walk(nodes, 0);
  return out.join(pick(['\n', '\n', '\r\n'])) + pick(['\n', '', '\n\n']);
}

const validText = fc
  .tuple(document, fc.array(fc.nat(99), { minLength: 1, maxLength: 40 }))
  .map(([nodes, style]) => render(nodes, style));

const options = {
  filename: 'Proxyfile',
  env: {},
  readFile: (p: string): string => {
    if (p === 'snippet.conf') return 'header X-Imported yes\n';
    throw Object.assign(new Error(`ENOENT: ${p}`), { code: 'ENOENT' });
  },
  readDir: (): string[] => ['snippet.conf', 'other.txt'],
};

describe('property: generated valid Proxyfiles', () => {
  it('parse into a model that validates against the Config schema', () => {
    fc.assert(
      fc.property(validText, (text) => {
        const config = parse(text, options);
        expect(Value.Check(Config, config)).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('format is idempotent', () => {
    fc.assert(
      fc.property(validText, (text) => {
        const once = format(text);
        expect(format(once)).toBe(once);
      }),
      { numRuns: 500 },
    );
  });

  it('parse(format(x)) equals parse(x)', () => {
    fc.assert(
      fc.property(validText, (text) => {
        expect(parse(format(text), options)).toEqual(parse(text, options));
      }),
      { numRuns: 500 },
    );
  });
});

const NOISE = [
  '{',
  '}',
  '"',
  '`',
  '#',
  '\n',
  ' ',
  '\t',
  '\\',
  'import snippet.conf\n',
  'import *.conf\n',
  '{$A}',
  '{$B:x}',
  '*',
  ':',
  ',',
  '(s) {\n',
  'import s\n',
  'é',
  '\u0000',
  '/',
  'reverse_proxy',
  'handle',
  '0',
];
const mutation = fc.tuple(
  fc.nat(),
  fc.nat(12),
  fc.constantFrom(...NOISE),
  fc.constantFrom('insert', 'delete', 'replace', 'duplicate'),
);

function mutate(text: string, muts: [number, number, string, string][]): string {
  let s = text;
  for (const [at, len, noise, kind] of muts) {
    const i = s.length === 0 ? 0 : at % s.length;
    if (kind === 'insert') s = s.slice(0, i) + noise + s.slice(i);
    else if (kind === 'delete') s = s.slice(0, i) + s.slice(i + len);
    else if (kind === 'replace') s = s.slice(0, i) + noise + s.slice(i + 1);
    else s = s.slice(0, i + len) + s.slice(i, i + len) + s.slice(i + len);
  }
  return s;
}

function onlyProxyfileErrors(text: string): void {
  const started = performance.now();
  let formatted: string | null = null;
  try {
    formatted = format(text);
  } catch (err) {
    if (!(err instanceof ProxyfileError)) throw err;
  }
  if (formatted !== null) expect(format(formatted)).toBe(formatted);
  try {
    const config = parse(text, options);
    expect(Value.Check(Config, config)).toBe(true);
    if (formatted !== null) expect(parse(formatted, options)).toEqual(config);
  } catch (err) {
    if (!(err instanceof ProxyfileError)) throw err;
    expect(err.message).toMatch(/^Proxyfile:\d+:\d+: |^[^:]+:\d+:\d+: /);
  }
  expect(performance.now() - started).toBeLessThan(1000);
}

describe('property: random and mutated input only ever throws ProxyfileError, never hangs', () => {
  it('6,000 mutated valid files', () => {
    fc.assert(
      fc.property(validText, fc.array(mutation, { minLength: 1, maxLength: 6 }), (text, muts) => {
        onlyProxyfileErrors(mutate(text, muts));
      }),
      { numRuns: 6000 },
    );
  });

  it('2,500 random strings of Proxyfile characters', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...NOISE, 'a', 'b.c', '1', '/s', 'x.test'), { maxLength: 60 }), (parts) => {
        onlyProxyfileErrors(parts.join(''));
      }),
      { numRuns: 2500 },
    );
  });

  it('2,000 arbitrary unicode strings', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 200 }), (text) => onlyProxyfileErrors(text)),
      { numRuns: 2000 },
    );
  });
});
