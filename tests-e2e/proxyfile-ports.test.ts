import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selfSigned } from './support/certs.js';
import { freePort, PROXYD_MAIN, type RunningProxyd, request, startProxyd, startUpstream } from './support/proxyd.js';

function httpsGet(port: number, servername: string, ca: Buffer): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      { host: '127.0.0.1', port, servername, headers: { host: servername }, ca, agent: false },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

// Site addresses with an explicit port, against the built daemon: each such
// port gets its own listener (plain HTTP for http://, HTTPS by SNI without a
// scheme), and the site is served there and nowhere else.
describe('Proxyfile site ports (built daemon)', () => {
  let proxyd: RunningProxyd;
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let dir = '';
  let plainPort = 0;
  let tlsPort = 0;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'proxyd-e2e-ports-'));
    selfSigned(dir, ['secure.localhost']);
    upstream = await startUpstream((req, res) => res.end(`upstream saw ${req.headers.host}`));
    plainPort = await freePort();
    tlsPort = await freePort();
    proxyd = await startProxyd({
      sites: `http://a.localhost:${plainPort} {
\treverse_proxy 127.0.0.1:${upstream.port}
}

secure.localhost:${tlsPort} {
\ttls ${path.join(dir, 'cert.pem')} ${path.join(dir, 'key.pem')}
\trespond "secure on its own port"
}

http://main.localhost {
\trespond "main"
}
`,
    });
  });

  afterAll(async () => {
    await proxyd?.stop();
    await upstream?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('http://a.localhost:<port> answers on that port', async () => {
    const res = await request(plainPort, { headers: { host: `a.localhost:${plainPort}` } });
    expect(res.status).toBe(200);
    expect(res.body).toBe(`upstream saw a.localhost:${plainPort}`);
  });

  it('the site is not served on the http_port, nor another site on its port', async () => {
    const onMain = await request(proxyd.httpPort, { headers: { host: 'a.localhost' } });
    expect([onMain.status, onMain.body]).toEqual([404, 'no route for host\n']);
    const otherOnSitePort = await request(plainPort, { headers: { host: 'main.localhost' } });
    expect([otherOnSitePort.status, otherOnSitePort.body]).toEqual([404, 'no route for host\n']);
    const main = await request(proxyd.httpPort, { headers: { host: 'main.localhost' } });
    expect([main.status, main.body]).toEqual([200, 'main']);
  });

  it('a site port without a scheme speaks HTTPS with the site’s certificate', async () => {
    const res = await httpsGet(tlsPort, 'secure.localhost', readFileSync(path.join(dir, 'cert.pem')));
    expect(res).toEqual({ status: 200, body: 'secure on its own port' });
  });

  it('a plain-HTTP request for the pinned HTTPS site on the http_port is refused, not redirected to the https_port', async () => {
    const res = await request(proxyd.httpPort, { headers: { host: 'secure.localhost' } });
    expect([res.status, res.body]).toEqual([404, 'no route for host\n']);
  });

  it('a bare "*" address is refused by validate, pointing at the catch-all forms (":<port>", "http://")', async () => {
    // Catch-all sites themselves (":8080 {") are served: tests-e2e/proxyfile-forms.test.ts.
    const file = path.join(dir, 'catch-all-star.Proxyfile');
    writeFileSync(file, '* {\n\trespond "x"\n}\n');
    const r = await new Promise<{ code: number; stderr: string }>((resolve) => {
      execFile(process.execPath, [PROXYD_MAIN, 'validate', '--config', file], (err, _stdout, stderr) =>
        resolve({ code: err ? Number(err.code) : 0, stderr }),
      );
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${file}:1:1: invalid site address "*": `);
    expect(r.stderr).toContain('write ":<port>" or "http://" for a site that answers any host');
  });
});
