// What llhttp (undici's wasm build, lenient flags all off) does with the
// request forms proxyd must refuse or treat with care. Prints one line per
// input: the parser's verdict, and for the accepted ones what the callbacks saw.
//
//   node bench/hotpath/strictness.mjs
import { OK, PAUSED, Parser, REQUEST } from './lib/llhttp.mjs';

class Probe extends Parser {
  constructor() {
    super(REQUEST);
    this.seen = [];
  }
  onHeaderField(b, s, e) {
    this.seen.push(b.latin1Slice(s, e));
    return 0;
  }
  onHeaderValue(b, s, e) {
    this.seen[this.seen.length - 1] += `=${JSON.stringify(b.latin1Slice(s, e))}`;
    return 0;
  }
  onHeadersComplete(_status, upgrade) {
    this.seen.push(`[${this.method()}${upgrade ? ' upgrade' : ''}]`);
    return 0;
  }
  onBody(b, s, e) {
    this.seen.push(`body ${JSON.stringify(b.latin1Slice(s, e))}`);
    return 0;
  }
  onMessageComplete() {
    this.seen.push('complete');
    return PAUSED;
  }
}

const cases = {
  'CL + TE': 'POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
  'duplicate CL, same value': 'POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc',
  'duplicate CL, different values': 'POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd',
  'CL list "3, 3"': 'POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3, 3\r\n\r\nabc',
  'obs-fold': 'GET / HTTP/1.1\r\nHost: a\r\nX-A: one\r\n two\r\n\r\n',
  'bare LF line ends': 'GET / HTTP/1.1\nHost: a\n\n',
  'bare LF in a header only': 'GET / HTTP/1.1\r\nHost: a\nX-B: c\r\n\r\n',
  'TE: gzip, chunked': 'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n',
  'TE: chunked, gzip': 'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n',
  'TE: identity': 'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n',
  'TE twice (chunked, chunked)':
    'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
  'space before colon': 'GET / HTTP/1.1\r\nHost : a\r\n\r\n',
  'chunk size with trailing space':
    'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3 \r\nabc\r\n0\r\n\r\n',
  'chunk extension': 'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\n\r\n',
  'chunk without CRLF after data': 'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX0\r\n\r\n',
  trailers: 'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: 1\r\n\r\n',
  'Expect: 100-continue': 'POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi',
  'Upgrade: websocket': 'GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n',
  'HTTP/1.0, no Host': 'GET / HTTP/1.0\r\n\r\n',
  'HTTP/1.1, no Host': 'GET / HTTP/1.1\r\n\r\n',
  'NUL in a value': 'GET / HTTP/1.1\r\nHost: a\r\nX-A: b\0c\r\n\r\n',
  'HTTP/2.0 version': 'GET / HTTP/2.0\r\nHost: a\r\n\r\n',
};

for (const [label, text] of Object.entries(cases)) {
  const p = new Probe();
  const ret = p.execute(Buffer.from(text, 'latin1'));
  const verdict = ret === OK || ret === PAUSED ? 'accepted' : `rejected (${p.reason()})`;
  console.log(`${label.padEnd(32)} ${verdict}${ret === OK || ret === PAUSED ? `: ${p.seen.join(' ')}` : ''}`);
  p.free();
}
