import { readFile, writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, adminCall, waitUntil } from './support/admin.js';
import { type RunningProxyd, request, startProxyd } from './support/proxyd.js';
import {
  openWebSocket,
  startWebSocketUpstream,
  type WebSocketClient,
  type WebSocketUpstream,
} from './support/websocket.js';

// Issue 28: a WebSocket already upgraded and proxied keeps working, both
// ways, through a Proxyfile reload (SIGHUP and POST /reload) and admin API
// writes, of other routes and of its own (Caddy closes them on a config
// reload: caddyserver/caddy#7222). A changed route sends new connections to
// its new upstreams while the open ones stay on the old; a deleted route
// refuses new connections while the open ones run on until either end
// closes them (as Caddy's and Traefik's tunnels do). Runs with the default
// workers and, in `pnpm test`'s second pass, with PROXY_WORKERS=1.
//
// The client is Node's own WebSocket, which sets Host from the URL: the
// WebSocket routes are named by loopback addresses (127.0.0.1 from the
// Proxyfile, 127.0.0.2 from the admin API; Linux routes all of 127/8 to lo).

describe('WebSockets through reloads and route changes (issue 28)', () => {
  let a: WebSocketUpstream;
  let b: WebSocketUpstream;
  let proxyd: RunningProxyd;
  let header: string;
  /** The Proxyfile's WebSocket, on route 127.0.0.1, and the API route's, on 127.0.0.2. */
  let fromFile: WebSocketClient;
  let fromApi: WebSocketClient;
  const api = (method: string, p: string, body?: unknown) => adminCall(proxyd.adminPort, method, p, body);
  const other = () => request(proxyd.httpPort, { headers: { host: 'other.test' } }).then((res) => res.body);
  const ws = (host: string) => openWebSocket(`ws://${host}:${proxyd.httpPort}/chat`);
  const writeSites = (wsPort: number, otherText: string) =>
    writeFile(
      proxyd.configPath,
      `${header}\n\nhttp://127.0.0.1 {\n\treverse_proxy 127.0.0.1:${wsPort}\n}\n\nhttp://other.test {\n\trespond "${otherText}"\n}\n`,
    );
  /** Both open WebSockets still answer, each from the upstream it was opened on. */
  const bothAnswer = async (round: string) => {
    expect(await fromFile.ask(`file ${round}`)).toBe(`a:file ${round}`);
    expect(await fromApi.ask(`api ${round}`)).toBe(`a:api ${round}`);
  };

  beforeAll(async () => {
    [a, b] = [await startWebSocketUpstream('a'), await startWebSocketUpstream('b')];
    proxyd = await startProxyd({
      sites: `http://127.0.0.1 {\n\treverse_proxy 127.0.0.1:${a.port}\n}\n\nhttp://other.test {\n\trespond "one"\n}\n`,
      autoHttps: 'off',
      env: { PROXY_ADMIN_TOKEN: ADMIN_TOKEN },
    });
    header = (await readFile(proxyd.configPath, 'utf8')).split('\n\n')[0] as string;
    expect(
      (await api('POST', '/routes', { domain: '127.0.0.2', upstream: `127.0.0.1:${a.port}`, tls: false })).status,
    ).toBe(201);
    fromFile = await ws('127.0.0.1');
    fromApi = await ws('127.0.0.2');
    await bothAnswer('at start');
  });

  afterAll(async () => {
    fromFile?.socket.close();
    fromApi?.socket.close();
    await proxyd?.stop();
    await a?.close();
    await b?.close();
  });

  it('survives a SIGHUP reload that changes another route', async () => {
    await writeSites(a.port, 'two');
    proxyd.child.kill('SIGHUP');
    await waitUntil(async () => (await other()) === 'two');
    await bothAnswer('after SIGHUP');
  });

  it('survives POST /reload that moves its own route to another upstream; new connections go there', async () => {
    await writeSites(b.port, 'three');
    const res = await api('POST', '/reload');
    expect(res.status).toBe(200);
    expect(await other()).toBe('three');
    await bothAnswer('after POST /reload');
    const fresh = await ws('127.0.0.1');
    expect(await fresh.ask('new')).toBe('b:new');
    fresh.socket.close();
    expect(a.open).toBe(2);
  });

  it('survives admin API writes of another route and of its own (new upstream, then deleted)', async () => {
    expect(
      (await api('POST', '/routes', { domain: 'api.test', upstream: `127.0.0.1:${b.port}`, tls: false })).status,
    ).toBe(201);
    await bothAnswer('after another route was written');

    expect(
      (await api('POST', '/routes', { domain: '127.0.0.2', upstream: `127.0.0.1:${b.port}`, tls: false })).status,
    ).toBe(201);
    await bothAnswer('after its own route moved');
    const fresh = await ws('127.0.0.2');
    expect(await fresh.ask('new')).toBe('b:new');
    fresh.socket.close();

    expect((await api('DELETE', '/routes/127.0.0.2')).status).toBe(200);
    await bothAnswer('after its own route was deleted');
    // No route for the name now: a new handshake is refused (404).
    await expect(ws('127.0.0.2')).rejects.toThrow(/failed/);
    expect(a.open).toBe(2);
  });

  it('ends when the client closes it, and the upstream connection with it', async () => {
    fromApi.socket.close(1000);
    expect(await fromApi.closed).toBe(1000);
    await waitUntil(() => a.open === 1);
    expect(await fromFile.ask('still')).toBe('a:still');
  });
});
