import fc from 'fast-check';

// Generators of valid Proxyfiles (random spacing, comments, blank lines,
// quoting, imports, snippets, environment placeholders) for the property
// tests (property.test.ts) and the long fuzz runs (property.stress.test.ts).

interface Node {
  tokens: readonly string[];
  block?: readonly Node[];
}

/** A generated configuration: the main text, the files it imports, and its environment. */
export interface Generated {
  text: string;
  files: Readonly<Record<string, string>>;
  env: Readonly<Record<string, string>>;
}

const HASH = '$2b$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy';
/** Values every generated file may read with {$VAR}. */
const ENV: Readonly<Record<string, string>> = {
  UP_HOST: '10.1.1.1',
  UP_PORT: '8081',
  HEADER_VALUE: 'from-env',
  RATE: '25/s',
};
const label = fc.stringMatching(/^[a-z][a-z0-9-]{0,6}[a-z0-9]$/);
const host = fc.constantFrom('127.0.0.1', '10.0.0.2', 'backend.internal', '[::1]', '[fd00::2]', 'app');
const port = fc.integer({ min: 1, max: 65535 });
const upstream = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.tuple(fc.constantFrom('', 'http://', 'https://'), host, port).map(([s, h, p]) => `${s}${h}:${p}`),
  },
  { weight: 1, arbitrary: fc.constantFrom('{$UP_HOST}:{$UP_PORT}', '{$UP_UNSET:127.0.0.1:7000}', '"[::1]:9000"') },
);
const duration = fc.constantFrom('500ms', '10s', '1m', '1m30s', '2h', '0');
const quote = (s: string) => fc.constantFrom(s, `"${s}"`);
const headerName = fc.constantFrom('X-Frame-Options', 'X-Test', 'Cache-Control', 'Server', 'X-A');
const headerValue = fc.constantFrom('DENY', '"a b c"', 'no-store', '"x # y"', '`raw "v"`', '{$HEADER_VALUE}', '""');

const schemeOf = (u: string) => (u.startsWith('https://') ? 's' : u.startsWith('http://') ? 'p' : 'n');
const pool = fc
  .array(upstream, { minLength: 1, maxLength: 4 })
  .filter((us) => !(us.some((u) => schemeOf(u) === 's') && us.some((u) => schemeOf(u) === 'p')));

const transport: fc.Arbitrary<Node> = fc.constantFrom<Node>(
  { tokens: ['transport', 'tls'] },
  {
    tokens: ['transport', 'tls'],
    block: [{ tokens: ['tls_server_name', 'backend.internal'] }, { tokens: ['tls_insecure_skip_verify'] }],
  },
  { tokens: ['transport', 'http'], block: [{ tokens: ['tls'] }, { tokens: ['tls_trusted_ca_certs', '/ca.pem'] }] },
  { tokens: ['transport', 'http'], block: [{ tokens: ['read_timeout', '5m'] }] },
  { tokens: ['transport', 'http'], block: [{ tokens: ['versions', 'h2c', '2'] }] },
);

const reverseProxy: fc.Arbitrary<Node> = fc
  .tuple(
    pool,
    fc.nat(4),
    fc.option(transport),
    fc.boolean(),
    fc.subarray([
      fc
        .constantFrom(
          'round_robin',
          'least_conn',
          'random',
          'ip_hash',
          'first',
          'cookie',
          'cookie srv',
          'cookie srv key',
        )
        .map((p) => ['lb_policy', ...p.split(' ')]),
      fc.nat(20).map((n) => ['lb_retries', String(n)]),
      duration.map((d) => ['lb_try_duration', d]),
      duration.map((d) => ['lb_try_interval', d]),
      fc.constant(['health_uri', '/health']),
      duration.filter((d) => d !== '0').map((d) => ['health_interval', d]),
      duration.filter((d) => d !== '0').map((d) => ['health_timeout', d]),
      duration.map((d) => ['fail_duration', d]),
      fc.constant(['header_up', 'X-Up', '"v"']),
      fc.constant(['header_up', '-X-Down']),
      fc.constant(['header_down', '-Server']),
      fc.constant(['header_down', '+X-Served-By', '"{host}"']),
      fc.constantFrom('-1', '100ms').map((f) => ['flush_interval', f]),
      duration.map((d) => ['stream_timeout', d]),
    ]),
  )
  .chain(([ups, onLine, tp, vanishing, optsArbs]) =>
    fc
      .tuple(fc.constant(ups), optsArbs.length ? fc.tuple(...optsArbs) : fc.constant([] as string[][]))
      .map(([u, opts]) => ({ ups: u, onLine, tp, vanishing, opts })),
  )
  .map(({ ups, onLine, tp, vanishing, opts }) => {
    // Some upstreams on the line, the rest on `to` lines (at least one upstream in all).
    const split = Math.min(onLine, ups.length);
    const line = ups.slice(0, split);
    const rest = ups.slice(split);
    const block: Node[] = opts.map((tokens) => ({ tokens }));
    if (rest.length > 0) block.unshift({ tokens: ['to', ...rest] });
    // An http:// pool cannot use transport tls.
    if (tp !== null && !ups.some((u) => schemeOf(u) === 'p')) block.push(tp);
    // An unset {$VAR} at the end of a line disappears, as in Caddy.
    const tokens = ['reverse_proxy', ...line, ...(vanishing ? ['{$OPTIONAL_UPSTREAM}'] : [])];
    return block.length > 0 ? { tokens, block } : { tokens };
  });

const handler: fc.Arbitrary<readonly Node[]> = fc.oneof(
  reverseProxy.map((n) => [n]),
  fc.constantFrom(
    [{ tokens: ['respond', '"hello"', '200'] }],
    [{ tokens: ['respond', '204'] }],
    [{ tokens: ['respond'] }],
    [{ tokens: ['respond', '""', '404'] }],
    [{ tokens: ['root', '*', '/srv/www'] }, { tokens: ['file_server'] }],
    [{ tokens: ['file_server'], block: [{ tokens: ['root', '"/srv/with space"'] }] }],
    [
      { tokens: ['root', '*', '/srv/spa'] },
      { tokens: ['try_files', '{path}', '{path}/', '/index.html'] },
      { tokens: ['file_server'] },
    ],
    [
      { tokens: ['try_files', '{path}.html', '=404'], block: [{ tokens: ['policy', 'first_exist'] }] },
      { tokens: ['root', '/srv'] },
      { tokens: ['file_server'] },
    ],
  ),
);

/** `rewrite` and `uri` lines (issue 34), with and without a matcher token. */
const rewrites: fc.Arbitrary<readonly Node[]> = fc.subarray<Node>([
  { tokens: ['rewrite', '/old/*', '/new{path}?{query}'] },
  { tokens: ['rewrite', '*', '/index.php?p={path}'] },
  { tokens: ['rewrite', '/v2{uri}'] },
  { tokens: ['uri', 'strip_prefix', '/api'] },
  { tokens: ['uri', '/files/*', 'strip_suffix', '.bak'] },
  { tokens: ['uri', 'replace', '/beta/', '/v2/', '1'] },
  { tokens: ['uri', 'path_regexp', '"^/u/([0-9]+)$"', '/users/$1'] },
]);

/** `forward_auth` (issue 34): Authelia's form, and oauth2-proxy's with renamed headers in a block. */
const forwardAuth: fc.Arbitrary<readonly Node[]> = fc.subarray<Node>(
  [
    {
      tokens: ['forward_auth', 'authelia:9091'],
      block: [
        { tokens: ['uri', '/api/authz/forward-auth'] },
        { tokens: ['copy_headers', 'Remote-User', 'Remote-Groups'] },
      ],
    },
    {
      tokens: ['forward_auth', 'https://auth.internal'],
      block: [
        { tokens: ['uri', '"/oauth2/auth?rd={uri}"'] },
        {
          tokens: ['copy_headers'],
          block: [{ tokens: ['X-Auth-Request-User>X-User'] }, { tokens: ['X-Auth-Request-Email'] }],
        },
      ],
    },
  ],
  { maxLength: 1 },
);

/** `handle_errors` blocks (issue 34): by code, by class, and for every error. */
const errorBlocks: fc.Arbitrary<readonly Node[]> = fc.subarray<Node>([
  {
    tokens: ['handle_errors', '404', '410'],
    block: [
      { tokens: ['rewrite', '*', '/errors/{err.status_code}.html'] },
      { tokens: ['root', '*', '/srv/errors'] },
      { tokens: ['file_server'] },
    ],
  },
  {
    tokens: ['handle_errors', '5xx'],
    block: [{ tokens: ['respond', '"{err.status_code} {err.status_text}"', '{err.status_code}'] }],
  },
  { tokens: ['handle_errors'], block: [{ tokens: ['respond', '"oops {err.message}"', '500'] }] },
]);

const basicAuth: fc.Arbitrary<Node> = fc
  .tuple(
    fc.constantFrom('basic_auth', 'basicauth'),
    fc.constantFrom([], ['bcrypt'], ['bcrypt', '"Realm"']),
    quote('Realm'),
  )
  .chain(([name, prefix, realm]) =>
    fc.constantFrom<readonly string[]>([name, ...prefix], [name, realm]).map((tokens) => ({
      tokens,
      block: [{ tokens: ['alice', HASH] }, { tokens: ['"bob smith"', HASH] }],
    })),
  );

const middle: fc.Arbitrary<readonly Node[]> = fc
  .tuple(
    fc.option(headerName.chain((n) => headerValue.map((v) => ({ tokens: ['header', n, v] })))),
    fc.option(
      headerName.chain((n) =>
        fc.constantFrom({ tokens: ['header', `-${n}`] }, { tokens: ['header', `+${n}`, 'extra'] }),
      ),
    ),
    fc.option(
      fc
        .array(fc.tuple(fc.constantFrom('', '+', '-'), headerName, headerValue), { minLength: 1, maxLength: 3 })
        .map((ops) => ({
          tokens: ['header'],
          block: ops.map(([op, n, v]) => ({ tokens: op === '-' ? [`-${n}`] : [`${op}${n}`, v] })),
        })),
    ),
    fc.option(basicAuth),
    fc.array(
      fc.constantFrom(
        ['redir', '/old/*', '/new/{http.request.uri.path.remainder}', '301'],
        ['redir', '/a', '/b', '308'],
        ['redir', 'https://example.com', '302'],
      ),
      { maxLength: 2 },
    ),
  )
  .map(([h1, h2, h3, auth, redirs]) => [
    ...(h1 ? [h1] : []),
    ...(h2 ? [h2] : []),
    ...(h3 ? [h3] : []),
    ...(auth ? [auth] : []),
    ...redirs.map((tokens) => ({ tokens })),
  ]);

const siteOnly: fc.Arbitrary<readonly Node[]> = fc
  .subarray([
    fc
      .oneof(
        fc.integer({ min: 1, max: 10_000 }).map((n) => `${n}/s`),
        fc.constantFrom('{$RATE}', '{$RATE_UNSET:3/s}'),
      )
      .map((r) => ({ tokens: ['rate_limit', r] })),
    fc.constantFrom<Node>(
      ...[['auto'], ['off'], ['internal'], ['/c.pem', '/k.pem']].map((a) => ({ tokens: ['tls', ...a] })),
      ...[[], ['auto'], ['internal']].map((a) => ({ tokens: ['tls', ...a], block: [{ tokens: ['on_demand'] }] })),
    ),
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

/** One condition of a named matcher (issue 34's Caddy matchers among them). */
const condition = fc.constantFrom<readonly string[]>(
  ['path', '/admin/*', '/api/*'],
  ['method', 'POST'],
  ['header', 'X-Test', 'a*'],
  ['host', 'a.test', '*.b.test'],
  ['query', 'format=json', 'debug=*'],
  ['path_regexp', 'u', '"^/users/([0-9]+)$"'],
  ['header_regexp', 'Cookie', '"beta=(\\w+)"'],
  ['client_ip', 'private_ranges', '100.64.0.0/10'],
  ['remote_ip', '127.0.0.1', '::1'],
  ['not', 'client_ip', '10.0.0.0/8'],
);

/**
 * Named matchers and their uses (`abort @m`, `respond @m …`): `@m0`, `@m1`
 * with one to three conditions, written on one line or as a block
 * (`not` also as a block of its own).
 */
const matcherRules: fc.Arbitrary<readonly Node[]> = fc
  .array(
    fc.tuple(
      fc.uniqueArray(condition, { minLength: 1, maxLength: 3, selector: (c) => c[0] }),
      fc.boolean(),
      fc.constantFrom<readonly string[]>(
        ['abort'],
        ['respond', '403'],
        ['respond', '"no {client_ip} {re.u.1}"', '451'],
      ),
    ),
    { maxLength: 2 },
  )
  .map((rules) =>
    rules.flatMap(([conds, asNotBlock, use], i): Node[] => {
      const name = `@m${i}`;
      const first = conds[0] as readonly string[];
      const def: Node =
        conds.length === 1 && !asNotBlock
          ? { tokens: [name, ...first] }
          : {
              tokens: [name],
              block: conds.map((c) =>
                asNotBlock && c[0] === 'not' ? { tokens: ['not'], block: [{ tokens: c.slice(1) }] } : { tokens: c },
              ),
            };
      return [def, { tokens: [use[0] as string, name, ...use.slice(1)] }];
    }),
  );

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

/**
 * How one address is written. Explicit ports are unique per address (8100+
 * for http://, 9100+ without a scheme), so no two sites ask one port for
 * different protocols.
 */
const addressForm = fc.constantFrom('bare', 'http', 'https', 'http-port', 'port', 'env', 'env-default');

function writeAddress(form: string, domain: string, slot: number, env: Record<string, string>): string {
  switch (form) {
    case 'http':
      return `http://${domain}`;
    case 'https':
      return `https://${domain}`;
    case 'http-port':
      return `http://${domain}:${8100 + slot}`;
    case 'port':
      return `${domain}:${9100 + slot}`;
    case 'env': {
      const name = `SITE_${slot}`;
      env[name] = domain;
      return `{$${name}}`;
    }
    case 'env-default':
      return `{$SITE_UNSET_${slot}:${domain}}`;
    default:
      return domain;
  }
}

/** A site's body, and how (part of) it is brought in: written inline, a snippet, or an imported file. */
interface SitePlan {
  addresses: string[];
  body: Node[];
  share: 'inline' | 'snippet' | 'file' | 'whole-file' | 'glob';
  cut: number;
}

const sitePlan = (domains: string[], first: number): fc.Arbitrary<SitePlan> =>
  fc
    .tuple(
      siteOnly,
      middle,
      handles,
      handler,
      fc.boolean(),
      fc.array(addressForm, { minLength: domains.length, maxLength: domains.length }),
      matcherRules,
      rewrites,
      errorBlocks,
      forwardAuth,
      fc.constantFrom<SitePlan['share']>('inline', 'inline', 'snippet', 'file', 'whole-file', 'glob'),
      fc.nat(),
    )
    .chain(([so, mid, hs, h, shuffle, forms, rules, rw, errs, fa, share, cut]) => {
      const body = [...so, ...mid, ...rules, ...fa, ...rw, ...hs, ...h, ...errs];
      return (shuffle ? fc.shuffledSubarray(body, { minLength: body.length }) : fc.constant(body)).map(
        (b): SitePlan => ({
          addresses: domains.map((d, i) => `${forms[i] ?? 'bare'}|${d}|${first + i}`),
          body: b,
          share,
          cut: b.length === 0 ? 0 : cut % (b.length + 1),
        }),
      );
    });

const EAB_KEY = 'c2VjcmV0LWhtYWMta2V5';
/** The global `on_demand_tls` block, which every `tls { on_demand }` needs. */
const ON_DEMAND_TLS: Node = {
  tokens: ['on_demand_tls'],
  block: [{ tokens: ['ask', 'http://127.0.0.1:5555/allowed'] }],
};

const globalBlock: fc.Arbitrary<Node | null> = fc.option(
  fc
    .tuple(
      fc.subarray<Node>([
        { tokens: ['http_port', '8080'] },
        { tokens: ['https_port', '8443'] },
        { tokens: ['email', 'ops@example.com'] },
        { tokens: ['admin', '127.0.0.1:6190'] },
        { tokens: ['acme_ca', 'https://acme.test/dir'] },
        { tokens: ['acme_ca', 'http://localhost:14000/dir'] },
        { tokens: ['acme_ca_root', '/etc/proxyd/acme-root.pem'] },
        ON_DEMAND_TLS,
        { tokens: ['state_dir', '/var/lib/proxyd'] },
        { tokens: ['trusted_proxies', '10.0.0.0/8', 'private_ranges'] },
        { tokens: ['geoip_db', '/geo.mmdb'] },
        {
          tokens: ['servers'],
          block: [
            {
              tokens: ['timeouts'],
              block: [{ tokens: ['read_header', '5s'] }, { tokens: ['idle', '2m'] }, { tokens: ['read_body', '0'] }],
            },
            { tokens: ['max_header_size', '32KiB'] },
            { tokens: ['max_connections_per_ip', '64'] },
          ],
        },
        {
          tokens: ['storage', 'redis', 'rediss://proxyd@127.0.0.1:6380/2'],
          block: [
            { tokens: ['password', '{env.REDIS_PASSWORD}'] },
            { tokens: ['tls'], block: [{ tokens: ['ca', '/etc/proxyd/redis-ca.pem'] }] },
            { tokens: ['key_prefix', 'fleet-a'] },
          ],
        },
      ]),
      fc.option(
        fc.constantFrom<Node>(
          { tokens: ['acme_eab', 'kid-1', EAB_KEY] },
          { tokens: ['acme_eab'], block: [{ tokens: ['key_id', 'kid-1'] }, { tokens: ['mac_key', EAB_KEY] }] },
        ),
      ),
      fc.option(fc.constantFrom('p256', 'rsa2048')),
      fc.option(fc.constantFrom('off', 'disable_redirects', 'disable_certs')),
      fc.option(
        fc.constantFrom<Node>(
          { tokens: ['docker', 'off'] },
          { tokens: ['docker'], block: [] },
          {
            tokens: ['docker'],
            block: [{ tokens: ['host', 'unix:///run/podman/podman.sock'] }, { tokens: ['network', 'proxy_net'] }],
          },
          { tokens: ['docker'], block: [{ tokens: ['network', 'web.1'] }, { tokens: ['host', 'tcp://[::1]:2375'] }] },
          { tokens: ['docker'], block: [{ tokens: ['host', '"tcp://docker.internal:2375"'] }] },
        ),
      ),
    )
    .map(([opts, eab, keyType, autoHttps, docker]): Node => {
      const block = [...opts];
      if (docker !== null) block.splice(block.length >> 1, 0, docker);
      if (eab !== null) block.push(eab);
      if (keyType !== null) block.push({ tokens: ['key_type', keyType] });
      if (autoHttps !== null) block.unshift({ tokens: ['auto_https', autoHttps] });
      return { tokens: ['{'], block };
    }),
);

/** Whether a node, or one nested in it, is a `tls … { on_demand }`. */
const usesOnDemand = (n: Node): boolean =>
  (n.tokens[0] === 'tls' && n.block !== undefined && n.block.length > 0) || (n.block ?? []).some(usesOnDemand);

/** The global block, with `on_demand_tls` added when a site asks for `tls { on_demand }` (without it, an error). */
function withAsk(global: Node | null, plans: readonly SitePlan[]): Node | null {
  if (!plans.some((p) => p.body.some(usesOnDemand))) return global;
  if (global === null) return { tokens: ['{'], block: [ON_DEMAND_TLS] };
  if ((global.block ?? []).includes(ON_DEMAND_TLS)) return global;
  return { tokens: ['{'], block: [...(global.block ?? []), ON_DEMAND_TLS] };
}

/** Renders nodes with spacing taken from `style` (cycled): indentation, separators, comments, blank lines. */
function render(nodes: readonly Node[], style: readonly number[]): string {
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

/**
 * Lays the sites out: snippets defined at the top (before use, as Caddy
 * requires), parts of bodies or whole sites in imported files (some by glob),
 * site addresses in every supported form, IPv6 included.
 */
function assemble(global: Node | null, plans: readonly SitePlan[], ipv6: boolean, style: readonly number[]): Generated {
  const env: Record<string, string> = { ...ENV };
  const files: Record<string, string> = {};
  const g = withAsk(global, plans);
  const top: Node[] = g ? [g] : [];
  const snippets: Node[] = [];
  const sites: Node[] = [];
  plans.forEach((plan, i) => {
    const addresses = plan.addresses.map((a) => {
      const [form, domain, slot] = a.split('|') as [string, string, string];
      return writeAddress(form, domain, Number(slot), env);
    });
    if (i === 0 && ipv6) addresses.push('[::1]', '[fd00::1]:9099');
    const keys = addresses.map((a, j) => (j < addresses.length - 1 ? `${a},` : a));
    let body = plan.body;
    if (plan.share === 'snippet' || plan.share === 'file') {
      const shared = body.slice(0, plan.cut);
      let importLine: Node;
      if (plan.share === 'snippet') {
        // Import arguments (Caddy's): one by index, the rest as a range.
        const withArgs: Node[] = [
          ...shared,
          { tokens: ['header', '{args[0]}', '"{args[1]}"'] },
          { tokens: [`@argsm${i}`, 'not', 'remote_ip', '{args[2:]}'] },
        ];
        snippets.push({ tokens: [`(part${i})`], block: withArgs });
        importLine = { tokens: ['import', `part${i}`, 'X-Part', `"part ${i}"`, '127.0.0.1', '::1'] };
      } else {
        files[`parts/part${i}.conf`] = render(shared, style);
        importLine = { tokens: ['import', `parts/part${i}.conf`] };
      }
      body = [importLine, ...body.slice(plan.cut)];
    }
    const site: Node = { tokens: keys, block: body };
    if (plan.share === 'whole-file') {
      files[`sites/site${i}.conf`] = render([site], style);
      sites.push({ tokens: ['import', `sites/site${i}.conf`] });
    } else if (plan.share === 'glob') {
      files[`globbed/site${i}.conf`] = render([site], style);
    } else sites.push(site);
  });
  if (Object.keys(files).some((f) => f.startsWith('globbed/'))) sites.push({ tokens: ['import', 'globbed/*.conf'] });
  return { text: render([...top, ...snippets, ...sites], style), files, env };
}

export const generated: fc.Arbitrary<Generated> = fc
  .uniqueArray(
    fc.tuple(label, label).map(([a, b]) => `${a}.${b}.test`),
    { minLength: 1, maxLength: 4 },
  )
  .chain((domains) =>
    fc.tuple(
      globalBlock,
      fc.tuple(...domains.map((d, i) => sitePlan(i === 0 ? [d, `*.w${i}.${d}`] : [d], i * 2))),
      fc.boolean(),
      fc.array(fc.nat(99), { minLength: 1, maxLength: 40 }),
    ),
  )
  .map(([g, plans, ipv6, style]) => assemble(g, plans, ipv6, style));

/** parse options reading the generated files from memory. */
export function optionsFor(g: Pick<Generated, 'files' | 'env'>) {
  return {
    filename: 'Proxyfile',
    env: g.env,
    readFile: (p: string): string => {
      const text = g.files[p];
      if (text === undefined) throw Object.assign(new Error(`ENOENT: ${p}`), { code: 'ENOENT' });
      return text;
    },
    readDir: (dir: string): string[] => {
      const prefix = dir === '.' ? '' : `${dir}/`;
      return Object.keys(g.files)
        .filter((f) => f.startsWith(prefix) && !f.slice(prefix.length).includes('/'))
        .map((f) => f.slice(prefix.length));
    },
  };
}
