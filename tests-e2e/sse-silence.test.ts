import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningProxyd, startProxyd, startUpstream } from './support/proxyd.js';

/** Upstream silence in this test: twice the daemon's default read timeout (60 s). */
const SILENCE_MS = 120_000;

/** A GET through proxyd; records each chunk with the time it arrived, and how the response ended. */
function watch(
  port: number,
  path: string,
): Promise<{ status: number; chunks: { at: number; text: string }[]; ended: 'end' | 'cut'; after: number }> {
  const start = Date.now();
  return new Promise((resolve) => {
    const chunks: { at: number; text: string }[] = [];
    const finish = (status: number, ended: 'end' | 'cut') =>
      resolve({ status, chunks, ended, after: Date.now() - start });
    const req = http.request({ host: '127.0.0.1', port, path, headers: { host: 'live.test' }, agent: false }, (res) => {
      res.setEncoding('utf8');
      res.on('data', (text: string) => chunks.push({ at: Date.now() - start, text }));
      res.on('end', () => finish(res.statusCode ?? 0, 'end'));
      res.on('aborted', () => finish(res.statusCode ?? 0, 'cut'));
      res.on('error', () => finish(res.statusCode ?? 0, 'cut'));
    });
    req.on('error', () => finish(0, 'cut'));
    req.end();
  });
}

// Issue 34, group 4: a Server-Sent Events stream whose upstream says nothing
// for 120 s, through the built daemon with its default 60 s upstream read
// timeout. The same daemon cuts a plain response silent as long (504 before
// its head; the connection cut after it), so the stream's survival is the
// SSE rule, not a missing timeout. Takes about two minutes, so it runs once in
// `pnpm test`: the second e2e pass (PROXY_WORKERS=1) leaves it out, as the rule
// is proxy-core's response pump, the same code in a worker and in one process.
describe('an SSE stream silent for 120 s (built daemon)', () => {
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let proxyd: RunningProxyd;

  beforeAll(async () => {
    upstream = await startUpstream((req, res) => {
      if (req.url === '/events') {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        res.write('data: hello\n\n');
        setTimeout(() => res.end('data: resumed\n\n'), SILENCE_MS);
        return;
      }
      if (req.url === '/download') {
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        res.write('first;');
        setTimeout(() => res.end('second;'), SILENCE_MS);
        return;
      }
      // /poll: no head for 120 s (a long poll without read_timeout set).
      setTimeout(() => res.end('late'), SILENCE_MS);
    });
    proxyd = await startProxyd({
      sites: `http://live.test {
	reverse_proxy 127.0.0.1:${upstream.port}
}
`,
    });
  });

  afterAll(async () => {
    await proxyd?.stop();
    await upstream?.close();
  });

  it(
    'delivers the event after the silence, while a plain download and a long poll are cut at 60 s',
    async () => {
      const [events, download, poll] = await Promise.all([
        watch(proxyd.httpPort, '/events'),
        watch(proxyd.httpPort, '/download'),
        watch(proxyd.httpPort, '/poll'),
      ]);
      expect(events.status).toBe(200);
      expect(events.ended).toBe('end');
      expect(events.chunks.map((c) => c.text).join('')).toBe('data: hello\n\ndata: resumed\n\n');
      expect(events.chunks.at(-1)?.at).toBeGreaterThanOrEqual(SILENCE_MS - 1_000);
      // The default read timeout is real: the same silence cuts the others at about 60 s.
      expect(download.chunks.map((c) => c.text).join('')).toBe('first;');
      expect(download.ended).toBe('cut');
      expect(download.after).toBeGreaterThan(55_000);
      expect(download.after).toBeLessThan(SILENCE_MS - 10_000);
      expect(poll.status).toBe(504);
      expect(poll.after).toBeLessThan(SILENCE_MS - 10_000);
    },
    SILENCE_MS + 60_000,
  );
});
