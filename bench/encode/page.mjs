// The page bench/encode serves: a deterministic, realistic HTML page of
// about 100 KB (a news/blog index: head with inline CSS, nav, articles of
// varied prose with links, lists and figures, a footer). Text is drawn from a
// fixed vocabulary by a seeded PRNG, so every run serves the same bytes and
// it compresses like real markup (gzip -6: about a quarter of its size), not
// like one repeated character.

/** Target size in bytes; the page closes its markup at the first article boundary past it. */
export const PAGE_BYTES = 100 * 1024;

const WORDS = `the a of and to in is that for on with as by at from this it be are was or an
proxy server request response header body cache upstream client browser network latency
throughput connection socket stream buffer compression encoding bytes page site domain
route config file process thread core memory kernel packet window handshake certificate
deploy release version build test bench measure median round result table figure
city river market garden library museum station bridge harbour festival winter summer
morning evening village mountain coast island forest valley weather season journey
people council school hospital family student teacher writer reader editor artist
quickly slowly quietly often rarely always never sometimes together already almost
new old small large early late long short public private local national open closed
said found made took gave showed built opened closed moved started finished wrote read
because although while after before during between across through without within
first second third last next every each many several few most other same different
data report study analysis review story article interview opinion letter column feature
price cost budget growth share rate level number amount increase decrease change trend`
  .split(/\s+/)
  .filter(Boolean);

const TAGS = ['news', 'tech', 'city', 'culture', 'science', 'sport', 'travel', 'opinion', 'business', 'health'];
const AUTHORS = ['Ada Moreau', 'Jonas Lind', 'Priya Natarajan', 'Tomás Ruiz', 'Mei Chen', 'Kwame Mensah', 'Elin Berg'];

/** mulberry32: a tiny seeded PRNG (deterministic across runs and platforms). */
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The page, as a Buffer of about {@link PAGE_BYTES} bytes (same bytes on every call). */
export function buildPage() {
  const rand = prng(18);
  const pick = (xs) => xs[Math.floor(rand() * xs.length)];
  const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
  const sentence = () => {
    const n = int(6, 18);
    const words = [];
    for (let i = 0; i < n; i++) words.push(pick(WORDS));
    const s = words.join(' ');
    return `${s[0].toUpperCase()}${s.slice(1)}${pick(['.', '.', '.', '?', '!'])}`;
  };
  const slug = (n) => Array.from({ length: n }, () => pick(WORDS)).join('-');
  const paragraph = () => {
    const parts = [];
    const n = int(3, 7);
    for (let i = 0; i < n; i++) {
      const s = sentence();
      parts.push(
        rand() < 0.25
          ? s.replace(/ (\w+) (\w+)/, (_m, a, b) => ` <a href="/${pick(TAGS)}/${slug(3)}">${a} ${b}</a>`)
          : s,
      );
    }
    return `      <p>${parts.join(' ')}</p>\n`;
  };

  const head = `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>The Daily Bench — front page</title>
  <meta name="description" content="News, features and opinion from the Daily Bench.">
  <link rel="stylesheet" href="/assets/site.css?v=3f2a9c1">
  <link rel="icon" href="/favicon.ico">
  <style>
    :root { --fg: #1b1f23; --muted: #57606a; --accent: #0969da; --bg: #ffffff; }
    body { margin: 0; font: 16px/1.6 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
    header.site, footer.site { padding: 1rem 2rem; border-bottom: 1px solid #d0d7de; }
    nav ul { display: flex; gap: 1rem; list-style: none; margin: 0; padding: 0; }
    main { max-width: 46rem; margin: 0 auto; padding: 1rem 2rem; }
    article { margin: 2.5rem 0; } article h2 a { color: inherit; text-decoration: none; }
    .meta { color: var(--muted); font-size: .875rem; } .tags a { margin-right: .5rem; color: var(--accent); }
    figure { margin: 1.5rem 0; } figure img { max-width: 100%; height: auto; } figcaption { color: var(--muted); font-size: .875rem; }
  </style>
</head>
<body>
  <header class="site">
    <a class="logo" href="/">The Daily Bench</a>
    <nav aria-label="Sections">
      <ul>
${TAGS.map((t) => `        <li><a href="/${t}/">${t[0].toUpperCase()}${t.slice(1)}</a></li>`).join('\n')}
      </ul>
    </nav>
  </header>
  <main id="content">
`;
  const tail = `  </main>
  <footer class="site">
    <p>© 2026 The Daily Bench. <a href="/about">About</a> · <a href="/contact">Contact</a> · <a href="/privacy">Privacy</a></p>
  </footer>
  <script src="/assets/site.js?v=3f2a9c1" defer></script>
</body>
</html>
`;
  let body = '';
  let id = 1000;
  while (head.length + body.length + tail.length < PAGE_BYTES) {
    id += int(1, 40);
    const title = sentence().slice(0, -1);
    const tags = Array.from({ length: int(1, 3) }, () => pick(TAGS));
    let a = `    <article id="post-${id}" class="post">
      <h2><a href="/${tags[0]}/${id}-${slug(4)}">${title}</a></h2>
      <p class="meta">By <a rel="author" href="/authors/${id % 97}">${pick(AUTHORS)}</a> · <time datetime="2026-${String(int(1, 12)).padStart(2, '0')}-${String(int(1, 28)).padStart(2, '0')}">${int(1, 28)} ${pick(['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'])} 2026</time> · ${int(2, 14)} min read</p>
`;
    const paras = int(2, 5);
    for (let i = 0; i < paras; i++) a += paragraph();
    if (rand() < 0.3) {
      a += '      <ul>\n';
      for (let i = int(2, 5); i > 0; i--) a += `        <li>${sentence()}</li>\n`;
      a += '      </ul>\n';
    }
    if (rand() < 0.35) {
      a += `      <figure>
        <img src="/media/${id}-${slug(2)}.jpg" alt="${sentence().slice(0, -1)}" width="${pick([640, 800, 1200])}" height="${pick([360, 450, 675])}" loading="lazy">
        <figcaption>${sentence()}</figcaption>
      </figure>
`;
    }
    a += `      <p class="tags">${tags.map((t) => `<a href="/${t}/">#${t}</a>`).join(' ')}</p>
    </article>
`;
    body += a;
  }
  return Buffer.from(head + body + tail, 'utf8');
}
