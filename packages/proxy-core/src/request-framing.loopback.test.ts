import { describe, expect, it } from 'vitest';
import { proxy, rawExchange, site, upstream } from './loopback.test-helpers.js';

// Issue 28: request framing at the front door. Transfer-Encoding is strict
// again (`transfer-encoding.ts`): `chunked` alone is accepted and re-framed
// upstream; other codings get 501, two lines or HTTP/1.0 get 400, as nginx
// 1.22 answers them. The framing errors Node's parser refuses (Content-Length
// with Transfer-Encoding, two Content-Lengths, obs-fold, …) keep their 400.
// A refused request never reaches the upstream.

const BODY = '5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n';

/** A POST to a.test with these header lines (each ending CRLF) and a chunked body. */
function post(lines: string, version = '1.1', body = BODY): string {
  return `POST /upload HTTP/${version}\r\nhost: a.test\r\n${lines}\r\n${body}`;
}

/** A recording upstream that answers with the body it read and its Transfer-Encoding lines. */
async function echo() {
  return upstream((req, res) => {
    let body = '';
    req.setEncoding('latin1');
    req.on('data', (d: string) => {
      body += d;
    });
    req.on('end', () => {
      const te = [];
      for (let i = 0; i < req.rawHeaders.length; i += 2) {
        if (req.rawHeaders[i]?.toLowerCase() === 'transfer-encoding') te.push(req.rawHeaders[i + 1]);
      }
      res.end(JSON.stringify({ body, te, length: req.headers['content-length'] ?? null }));
    });
  });
}

function status(response: string): number {
  return Number(response.slice(9, 12));
}

describe('issue 28: Transfer-Encoding', () => {
  const accepted: [string, string][] = [
    ['chunked', 'transfer-encoding: chunked\r\n'],
    ['Chunked (letter case)', 'Transfer-Encoding: Chunked\r\n'],
    ['CHUNKED', 'TRANSFER-ENCODING: CHUNKED\r\n'],
    // Trailing HTAB is refused by Node's parser (400), though RFC 9110 §5.6.3 allows it as OWS.
    ['whitespace around chunked', 'Transfer-Encoding: \t chunked  \r\n'],
  ];
  for (const [name, lines] of accepted) {
    it(`accepts ${name} and forwards the body chunked, with one Transfer-Encoding line it wrote`, async () => {
      const up = await echo();
      const { port } = await proxy([site('a.test', [up.port])]);
      const response = await rawExchange(port, post(`${lines}connection: close\r\n`), 1500);
      expect(status(response)).toBe(200);
      const seen = JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>;
      expect(seen).toEqual({ body: 'hello world', te: ['chunked'], length: null });
      expect(up.seen).toHaveLength(1);
    });
  }

  const refused: [string, string, string, number][] = [
    ['identity, chunked', 'Transfer-Encoding: identity, chunked\r\n', '1.1', 501],
    ['gzip, chunked', 'Transfer-Encoding: gzip, chunked\r\n', '1.1', 501],
    ['a list with an empty element (, chunked)', 'Transfer-Encoding: , chunked\r\n', '1.1', 501],
    ['two lines (identity, then chunked)', 'Transfer-Encoding: identity\r\nTransfer-Encoding: chunked\r\n', '1.1', 400],
    ['two lines of chunked', 'Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n', '1.1', 400],
    // Keep-alive: without it Node's parser refuses the pipelined request behind (data after the last message).
    ['chunked on HTTP/1.0', 'Connection: keep-alive\r\nTransfer-Encoding: chunked\r\n', '1.0', 400],
    // Refused by Node's parser already (the final coding is not chunked once): kept.
    ['chunked, chunked', 'Transfer-Encoding: chunked, chunked\r\n', '1.1', 400],
    ['chunked, gzip', 'Transfer-Encoding: chunked, gzip\r\n', '1.1', 400],
    ['gzip alone', 'Transfer-Encoding: gzip\r\n', '1.1', 400],
    ['identity alone', 'Transfer-Encoding: identity\r\n', '1.1', 400],
    ['chunked with a parameter', 'Transfer-Encoding: chunked;q=1\r\n', '1.1', 400],
    ['xchunked', 'Transfer-Encoding: xchunked\r\n', '1.1', 400],
  ];
  for (const [name, lines, version, expected] of refused) {
    it(`answers ${name} with ${expected}, closes, and sends nothing upstream`, async () => {
      const up = await echo();
      const { port } = await proxy([site('a.test', [up.port])]);
      // A second request behind the body: it must not be read either.
      const response = await rawExchange(
        port,
        `${post(lines, version)}GET /next HTTP/1.1\r\nhost: a.test\r\n\r\n`,
        3000,
      );
      expect(status(response)).toBe(expected);
      expect(response.match(/HTTP\/1\.1 /g)).toHaveLength(1);
      expect(response).toMatch(/\r\nconnection: close\r\n/i);
      expect(up.seen).toEqual([]);
    });
  }

  it('answers a WebSocket upgrade with gzip, chunked with 501 and opens no upstream connection', async () => {
    const up = await echo();
    const { port } = await proxy([site('a.test', [up.port])]);
    const response = await rawExchange(
      port,
      'GET /ws HTTP/1.1\r\nhost: a.test\r\nconnection: upgrade\r\nupgrade: websocket\r\n' +
        'sec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n' +
        `transfer-encoding: gzip, chunked\r\n\r\n${BODY}`,
      1500,
    );
    expect(status(response)).toBe(501);
    expect(up.seen).toEqual([]);
    expect(up.connections.size).toBe(0);
  });
});

describe('request framing Node refuses: still 400, nothing upstream', () => {
  const cases: [string, string][] = [
    ['Content-Length and Transfer-Encoding', post('content-length: 5\r\ntransfer-encoding: chunked\r\n')],
    ['Transfer-Encoding and Content-Length', post('transfer-encoding: chunked\r\ncontent-length: 5\r\n')],
    ['two equal Content-Lengths', post('content-length: 5\r\ncontent-length: 5\r\n', '1.1', 'hello')],
    ['two different Content-Lengths', post('content-length: 5\r\ncontent-length: 6\r\n', '1.1', 'hello ')],
    ['a Content-Length list', post('content-length: 5, 5\r\n', '1.1', 'hello')],
    ['a signed Content-Length', post('content-length: +5\r\n', '1.1', 'hello')],
    ['obs-fold', post('x-a: a\r\n b\r\ncontent-length: 5\r\n', '1.1', 'hello')],
    ['obs-fold of Transfer-Encoding', post('transfer-encoding:\r\n chunked\r\n')],
    ['whitespace before the colon', post('transfer-encoding : chunked\r\n')],
    ['a bare LF ending a header line', post('x-a: a\ncontent-length: 5\r\n', '1.1', 'hello')],
    ['a bare LF ending the request line', 'GET / HTTP/1.1\nhost: a.test\r\n\r\n'],
    ['a bare CR in a header value', post('x-a: a\rb\r\ncontent-length: 5\r\n', '1.1', 'hello')],
    ['a bad chunk size', post('transfer-encoding: chunked\r\n', '1.1', '5x\r\nhello\r\n0\r\n\r\n')],
    ['a chunk without its CRLF', post('transfer-encoding: chunked\r\n', '1.1', '5\r\nhelloX0\r\n\r\n')],
  ];
  for (const [name, bytes] of cases) {
    it(name, async () => {
      const up = await echo();
      const { port } = await proxy([site('a.test', [up.port])]);
      const response = await rawExchange(port, bytes, 1500);
      expect(status(response)).toBe(400);
      expect(up.seen).toEqual([]);
    });
  }
});

describe('issue 28: a request pipelined behind one the front door refuses', () => {
  const refusals: [string, string, number][] = [
    ['gzip, chunked', post('transfer-encoding: gzip, chunked\r\n'), 501],
    // With a body: the connection lingers after the answer (`BodyWatch`), so the follower is not merely cut off.
    ['two Host lines', 'POST /first HTTP/1.1\r\nhost: a.test\r\nhost: b.test\r\ncontent-length: 5\r\n\r\nhello', 400],
    ['a target of another host', 'POST http://b.test/ HTTP/1.1\r\nhost: a.test\r\ncontent-length: 5\r\n\r\nhello', 400],
  ];
  for (const [name, first, expected] of refusals) {
    it(`is never forwarded (${name}: ${expected}, then close)`, async () => {
      const up = await echo();
      const { port } = await proxy([site('a.test', [up.port])]);
      const next = 'GET /next HTTP/1.1\r\nhost: a.test\r\n\r\n';
      const response = await rawExchange(port, `${first}${next}${next}`, 3000);
      expect(status(response)).toBe(expected);
      expect(response.match(/HTTP\/1\.1 /g)).toHaveLength(1);
      expect(up.seen).toEqual([]);
    });
  }

  it('is never forwarded as a WebSocket upgrade either', async () => {
    const up = await echo();
    const { port } = await proxy([site('a.test', [up.port])]);
    const upgrade =
      'GET /ws HTTP/1.1\r\nhost: a.test\r\nconnection: upgrade\r\nupgrade: websocket\r\n' +
      'sec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n';
    const response = await rawExchange(port, `${post('transfer-encoding: gzip, chunked\r\n')}${upgrade}`, 3000);
    expect(status(response)).toBe(501);
    expect(response.match(/HTTP\/1\.1 /g)).toHaveLength(1);
    expect(up.seen).toEqual([]);
    expect(up.connections.size).toBe(0);
  });
});
