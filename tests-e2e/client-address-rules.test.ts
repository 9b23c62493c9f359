import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningProxyd, startProxyd, startUpstream } from './support/proxyd.js';

const run = promisify(execFile);

/** curl from a chosen loopback source address; resolves its exit code, status and body. */
async function curl(
  port: number,
  host: string,
  from: string,
  headers: string[] = [],
  path = '/',
): Promise<{ code: number; status: number; body: string }> {
  const args = ['-s', '--interface', from, '-o', '-', '-w', '\n%{http_code}', '-H', `host: ${host}`];
  for (const h of headers) args.push('-H', h);
  args.push(`http://127.0.0.1:${port}${path}`);
  try {
    const { stdout } = await run('curl', args);
    const cut = stdout.lastIndexOf('\n');
    return { code: 0, status: Number(stdout.slice(cut + 1)), body: stdout.slice(0, cut) };
  } catch (err) {
    const e = err as { code: number; stdout: string };
    return { code: e.code, status: Number(e.stdout.slice(e.stdout.lastIndexOf('\n') + 1)), body: '' };
  }
}

// Issue 34: an admin panel kept LAN- or VPN-only with client_ip / remote_ip
// matchers, `abort` and `respond 403`, through the built daemon. curl is the
// client; it connects from two loopback addresses (127.0.0.1 and 127.0.0.2)
// so that remote_ip sees two real peers; X-Forwarded-For is believed only
// from the trusted proxy 127.0.0.1.
describe('client address rules (built daemon, curl)', () => {
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let proxyd: RunningProxyd;

  beforeAll(async () => {
    upstream = await startUpstream((req, res) => res.end(`panel ${req.url}`));
    proxyd = await startProxyd({
      global: '\ttrusted_proxies 127.0.0.1\n',
      sites: `http://admin.test {
	@outside not client_ip 10.0.0.0/8 192.168.0.0/16
	abort @outside
	reverse_proxy 127.0.0.1:${upstream.port}
}

http://panel.test {
	@outside {
		not remote_ip 127.0.0.1
	}
	respond @outside "local only, not {remote_host}" 403
	@user path_regexp user ^/users/([0-9]+)$
	respond @user "user {re.user.1} seen from {client_ip} ({header.X-Via})"
	reverse_proxy 127.0.0.1:${upstream.port}
}
`,
    });
  });

  afterAll(async () => {
    await proxyd?.stop();
    await upstream?.close();
  });

  it('abort closes the connection for a client outside the ranges; inside, the panel answers', async () => {
    expect(await curl(proxyd.httpPort, 'admin.test', '127.0.0.1', ['x-forwarded-for: 10.9.8.7'], '/x')).toEqual({
      code: 0,
      status: 200,
      body: 'panel /x',
    });
    // curl exit 52: "Empty reply from server".
    const outside = await curl(proxyd.httpPort, 'admin.test', '127.0.0.1', ['x-forwarded-for: 203.0.113.9']);
    expect(outside.code).toBe(52);
    // 127.0.0.2 is no trusted proxy: its X-Forwarded-For is ignored and 127.0.0.2 is outside the ranges.
    expect((await curl(proxyd.httpPort, 'admin.test', '127.0.0.2', ['x-forwarded-for: 10.9.8.7'])).code).toBe(52);
  });

  it('remote_ip is the connection peer: 403 from 127.0.0.2, the panel from 127.0.0.1', async () => {
    expect(await curl(proxyd.httpPort, 'panel.test', '127.0.0.2')).toEqual({
      code: 0,
      status: 403,
      body: 'local only, not 127.0.0.2',
    });
    expect(await curl(proxyd.httpPort, 'panel.test', '127.0.0.1', [], '/y')).toMatchObject({
      status: 200,
      body: 'panel /y',
    });
    expect(
      await curl(
        proxyd.httpPort,
        'panel.test',
        '127.0.0.1',
        ['x-forwarded-for: 198.51.100.4', 'x-via: vpn'],
        '/users/7',
      ),
    ).toMatchObject({ status: 200, body: 'user 7 seen from 198.51.100.4 (vpn)' });
  });
});
