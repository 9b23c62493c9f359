import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminCall, waitUntil } from './support/admin.js';
import { proxydCommand, type RunningProxyd, request, startProxyd } from './support/proxyd.js';

// A site's `log` (Caddy's directive) against the built daemon: JSON lines in
// the file, from one process and from two workers (whose lines the primary
// writes), rolled under load without a lost or torn line, and changed by a
// reload, which a file that cannot be opened fails with the running config kept.

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Line {
  ts: number;
  logger: string;
  msg: string;
  request: {
    client_ip: string;
    proto: string;
    method: string;
    host: string;
    uri: string;
    headers: Record<string, string[]>;
  };
  duration: number;
  size: number;
  status: number;
}

/** Every line of the live file and the rolled ones beside it (gunzipped), oldest file first. */
async function readLog(dir: string, base = 'access'): Promise<{ files: string[]; lines: string[] }> {
  const names = (await readdir(dir)).filter((f) => f.startsWith(`${base}`)).sort();
  // `access.log` sorts before `access-<stamp>…`: the live file is the newest, last.
  const ordered = [...names.filter((f) => f !== `${base}.log`), ...names.filter((f) => f === `${base}.log`)];
  let text = '';
  for (const f of ordered) {
    const raw = await readFile(path.join(dir, f));
    text += f.endsWith('.gz') ? gunzipSync(raw).toString() : raw.toString();
  }
  return { files: ordered, lines: text.split('\n').filter((l) => l !== '') };
}

async function linesOf(file: string): Promise<Line[]> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Line);
}

describe.each([1, 2])('site log with --workers %i', (workers) => {
  let logs: string;
  let proxyd: RunningProxyd;
  beforeAll(async () => {
    logs = await mkdtemp(path.join(tmpdir(), 'proxyd-site-log-'));
    proxyd = await startProxyd({
      args: ['--workers', String(workers), '--no-docker'],
      sites: `http://logged.test {
	log {
		output file ${logs}/access.log {
			roll_size 16KiB
			roll_keep 1000
		}
		format json
	}
	respond "hello"
}

http://quiet.test {
	respond "quiet"
}
`,
    });
  });
  afterAll(async () => {
    await proxyd?.stop();
    await rm(logs, { recursive: true, force: true });
  });

  it('writes one JSON line per request, without the query string or secret headers', async () => {
    const res = await request(proxyd.httpPort, {
      path: '/first?token=s3cret',
      headers: {
        host: 'logged.test',
        'user-agent': 'e2e-agent',
        referer: 'https://ref.test/',
        authorization: 'Bearer s3cret',
        cookie: 'sid=s3cret',
      },
    });
    expect(res.body).toBe('hello');
    await request(proxyd.httpPort, { path: '/not-logged', headers: { host: 'quiet.test' } });
    const file = path.join(logs, 'access.log');
    await waitUntil(async () => (await linesOf(file)).length >= 1);
    await sleep(300); // past a batch's 100 ms: a line for quiet.test would be in by now
    const text = await readFile(file, 'utf8');
    expect(text).not.toContain('s3cret');
    expect(text).not.toContain('not-logged');
    const [line] = await linesOf(file);
    expect(line).toMatchObject({
      logger: 'http.log.access',
      msg: 'handled request',
      request: {
        client_ip: '127.0.0.1',
        proto: 'HTTP/1.1',
        method: 'GET',
        host: 'logged.test',
        uri: '/first',
        headers: { 'User-Agent': ['e2e-agent'], Referer: ['https://ref.test/'] },
      },
      size: 5,
      status: 200,
    });
    expect(Math.abs((line?.ts ?? 0) - Date.now() / 1000)).toBeLessThan(60);
    expect(line?.duration).toBeGreaterThanOrEqual(0);
  });

  it('rolls under concurrent load with every line whole and none lost', async () => {
    const before = (await readLog(logs)).lines.length;
    const total = 600;
    let next = 0;
    const client = async () => {
      while (next < total) {
        const i = next++;
        const res = await request(proxyd.httpPort, {
          path: `/load/${i}`,
          headers: { host: 'logged.test', 'user-agent': 'x'.repeat(i % 300) },
        });
        expect(res.status).toBe(200);
      }
    };
    await Promise.all(Array.from({ length: 16 }, client));
    // Settled: every line in, every rolled file gzipped (a gzip in progress leaves a plain file beside it).
    const settled = async () => {
      try {
        const r = await readLog(logs);
        return r.lines.length === before + total && r.files.every((f) => f === 'access.log' || f.endsWith('.gz'));
      } catch {
        return false;
      }
    };
    await waitUntil(settled, 10_000);
    const { files, lines } = await readLog(logs);
    // ~250-550 bytes a line, 16 KiB files: the load rolled the file many times.
    expect(files.length).toBeGreaterThan(5);
    expect(files.filter((f) => f.endsWith('.gz')).length).toBe(files.length - 1);
    expect(lines).toHaveLength(before + total);
    const uris = lines.slice(before).map((l) => (JSON.parse(l) as Line).request.uri);
    expect(new Set(uris).size).toBe(total);
    for (let i = 0; i < total; i++) expect(uris).toContain(`/load/${i}`);
    for (const f of files.filter((f) => f.endsWith('.gz'))) {
      const size = gunzipSync(await readFile(path.join(logs, f))).length;
      expect(size).toBeLessThanOrEqual(16 * 1024);
    }
  });
});

describe('site log and reload (--workers 2)', () => {
  let logs: string;
  let proxyd: RunningProxyd;
  let header: string;
  const site = (logBlock: string) => `http://app.test {\n${logBlock}\trespond "app"\n}\n`;
  const fileLog = (file: string) => `\tlog {\n\t\toutput file ${file}\n\t}\n`;
  const via = (p: string) => request(proxyd.httpPort, { path: p, headers: { host: 'app.test' } });
  const reload = () => adminCall(proxyd.adminPort, 'POST', '/reload');

  beforeAll(async () => {
    logs = await mkdtemp(path.join(tmpdir(), 'proxyd-site-log-reload-'));
    await writeFile(path.join(logs, 'plain'), '');
    proxyd = await startProxyd({
      args: ['--workers', '2', '--no-docker'],
      env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN },
      sites: site(fileLog(`${logs}/a.log`)),
    });
    header = (await readFile(proxyd.configPath, 'utf8')).split('\n\n')[0] as string;
  });
  afterAll(async () => {
    await proxyd?.stop();
    await rm(logs, { recursive: true, force: true });
  });

  it('refuses a reload whose log file cannot be opened, keeps logging as before, then follows a good one', async () => {
    const uris = async (name: string) => (await linesOf(path.join(logs, name))).map((l) => l.request.uri);
    await via('/one');
    await waitUntil(async () => (await uris('a.log')).includes('/one'));

    await writeFile(proxyd.configPath, `${header}\n\n${site(fileLog(`${logs}/plain/b.log`))}`);
    const refused = await reload();
    expect(refused.status).toBe(400);
    expect(refused.body).toMatch(/^site "app\.test": log file ".*\/plain\/b\.log" cannot be opened: (EEXIST|ENOTDIR)/);
    await via('/two');
    await waitUntil(async () => (await uris('a.log')).includes('/two'));

    await sleep(5100); // the reload cooldown (spec: 5 s, consumed by a failed reload too)
    await writeFile(proxyd.configPath, `${header}\n\n${site(fileLog(`${logs}/b.log`))}`);
    const accepted = await reload();
    expect(accepted.status).toBe(200);
    await via('/three');
    await waitUntil(async () => (await uris('b.log')).includes('/three'));
    await sleep(300);
    expect(await uris('a.log')).toEqual(['/one', '/two']);
    expect(await uris('b.log')).toEqual(['/three']);
  });
});

describe('proxyd validate and site log files', () => {
  it('fails on a log file the daemon could not open, at the path, and creates nothing for a good one', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'proxyd-site-log-validate-'));
    try {
      await writeFile(path.join(dir, 'plain'), '');
      const config = path.join(dir, 'Proxyfile');
      const write = (file: string) =>
        writeFile(config, `http://a.test {\n\tlog {\n\t\toutput file ${file}\n\t}\n\trespond "a"\n}\n`);
      const validate = () => {
        const { file, args } = proxydCommand(['validate', '--config', config]);
        return spawnSync(file, args, { encoding: 'utf8' });
      };
      await write(`${dir}/plain/a.log`);
      const bad = validate();
      expect(bad.status).toBe(1);
      expect(bad.stderr).toBe(
        `${config}:3:15: site "a.test": log file "${dir}/plain/a.log" cannot be opened: ENOTDIR: "${dir}/plain" is not a directory\n`,
      );
      await write(`${dir}/logs/a.log`);
      const good = validate();
      expect(good.stdout).toBe('Valid configuration: 1 site, 0 upstreams\n');
      expect(good.status).toBe(0);
      expect(existsSync(path.join(dir, 'logs'))).toBe(false);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
