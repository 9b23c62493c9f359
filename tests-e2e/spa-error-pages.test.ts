import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, type RunningProxyd, startProxyd } from './support/proxyd.js';

const FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking'];

/** A single-page app: one shell whose script renders the route from location.pathname, and links using pushState. */
const SHELL = `<!doctype html><html><head><title>spa</title><script src="/assets/app.js" defer></script></head>
<body><nav><a id="to-settings" href="/settings/profile">settings</a></nav><main id="view"></main></body></html>`;
const APP = `function render() { document.getElementById('view').textContent = 'route ' + location.pathname; }
document.addEventListener('click', (e) => {
  const a = e.target.closest('a');
  if (!a) return;
  e.preventDefault();
  history.pushState(null, '', a.getAttribute('href'));
  render();
});
window.addEventListener('popstate', render);
render();`;

// Issue 34, group 2: a single-page app behind the built daemon with
// `try_files {path} /index.html`, and `handle_errors` pages for a missing
// document (404) and an upstream that refuses connections (502), seen by
// Chromium.
describe('try_files single-page app and handle_errors pages (built daemon, Chromium)', () => {
  let proxyd: RunningProxyd;
  let dir: string;
  let context: BrowserContext;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'proxyd-spa-'));
    await mkdir(path.join(dir, 'app', 'assets'), { recursive: true });
    await mkdir(path.join(dir, 'errors'));
    await writeFile(path.join(dir, 'app', 'index.html'), SHELL);
    await writeFile(path.join(dir, 'app', 'assets', 'app.js'), APP);
    await writeFile(path.join(dir, 'errors', '404.html'), '<h1 id="err">custom not found</h1>');
    await writeFile(path.join(dir, 'errors', '502.html'), '<h1 id="err">backend down, try later</h1>');
    const down = await freePort();
    proxyd = await startProxyd({
      sites: `http://spa.localhost:HTTP_PORT {
	handle /api/* {
		reverse_proxy 127.0.0.1:${down}
	}
	handle /docs/* {
		root * ${dir}/app
		try_files {path}.html =404
		file_server
	}
	handle {
		root * ${dir}/app
		try_files {path} /index.html
		file_server
	}
	handle_errors 404 502 {
		rewrite * /{err.status_code}.html
		root * ${dir}/errors
		file_server
	}
}
`,
    });
    context = await chromium.launchPersistentContext(await mkdtemp(path.join(tmpdir(), 'proxyd-chromium-')), {
      executablePath: '/usr/bin/chromium',
      headless: true,
      args: FLAGS,
    });
  });

  afterAll(async () => {
    await context?.close();
    await proxyd?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('answers a deep link with the app shell, which routes on the client; a reload keeps working', async () => {
    const page = await context.newPage();
    const base = `http://spa.localhost:${proxyd.httpPort}`;
    const first = await page.goto(`${base}/`);
    expect(first?.status()).toBe(200);
    await expect.poll(() => page.textContent('#view')).toBe('route /');
    await page.click('#to-settings');
    expect(await page.textContent('#view')).toBe('route /settings/profile');
    // A reload asks the server for /settings/profile, which no file answers: try_files gives the shell.
    const reloaded = await page.reload();
    expect(reloaded?.status()).toBe(200);
    await expect.poll(() => page.textContent('#view')).toBe('route /settings/profile');
    const deep = await page.goto(`${base}/projects/7/board?tab=2`);
    expect(deep?.status()).toBe(200);
    await expect.poll(() => page.textContent('#view')).toBe('route /projects/7/board');
    await page.close();
  });

  it('shows the custom 404 and 502 pages with their statuses', async () => {
    const page = await context.newPage();
    const base = `http://spa.localhost:${proxyd.httpPort}`;
    const missing = await page.goto(`${base}/docs/nothing-here`);
    expect(missing?.status()).toBe(404);
    expect(await page.textContent('#err')).toBe('custom not found');
    const down = await page.goto(`${base}/api/orders`);
    expect(down?.status()).toBe(502);
    expect(await page.textContent('#err')).toBe('backend down, try later');
    await page.close();
  });
});
