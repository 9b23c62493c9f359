import type { IncomingMessage } from 'node:http';

/** `chunked` alone, any letter case, optional whitespace around it (RFC 9110 §5.5 OWS, trimmed by Node). */
const CHUNKED_ONLY = /^[ \t]*chunked[ \t]*$/i;
/** A list whose final coding is `chunked`. */
const FINAL_CHUNKED = /,[ \t]*chunked[ \t]*$/i;

/**
 * What the front door answers a request that has a `Transfer-Encoding`
 * header (issue 28): 0 to go on, or the status to refuse it with.
 *
 * Node's parser (llhttp) refuses with 400, before the request is handed
 * over, `chunked` twice or before another coding, and Transfer-Encoding
 * with Content-Length. It hands over other codings before `chunked`, and
 * two lines joined, and frames the body by the final `chunked` alone —
 * which an upstream that reads the header another way does not (TE.TE
 * smuggling); a request whose only coding is not `chunked` it refuses only
 * after handing it over. So, here:
 *
 * - an HTTP/1.0 request: 400 (RFC 9112 §6.1: a Transfer-Encoding in an
 *   HTTP/1.0 message is treated as faulty framing; an HTTP/1.0 peer does
 *   not know chunked), as nginx 1.22;
 * - more than one Transfer-Encoding line: 400 (a peer that reads only the
 *   first or the last line frames the body differently), as nginx 1.22;
 * - a final coding other than `chunked` (`gzip`, `identity`, `xchunked`):
 *   400 (RFC 9112 §6.3: the body's length cannot be determined, the server
 *   MUST answer 400; nginx answers 501);
 * - other codings before `chunked` (`gzip, chunked`, `identity, chunked`,
 *   `, chunked`): 501, as nginx 1.22 and HAProxy (RFC 9112 §6.1: a server
 *   that receives a transfer coding it does not understand SHOULD answer
 *   501; proxyd decodes `chunked` only, and never forwards a coding it did
 *   not decode).
 *
 * The upstream request is re-framed by the forwarder (`chunked`, its own
 * header line); an HTTP/2 request carries no Transfer-Encoding (RFC 9113
 * §8.2.2, refused by Node).
 */
export function transferEncodingStatus(req: IncomingMessage): 0 | 400 | 501 {
  if (req.httpVersionMajor === 1 && req.httpVersionMinor === 0) return 400;
  const raw = req.rawHeaders;
  let lines = 0;
  let value = '';
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === 17 && name.toLowerCase() === 'transfer-encoding') {
      lines++;
      value = raw[i + 1] as string;
    }
  }
  if (lines !== 1) return 400;
  if (CHUNKED_ONLY.test(value)) return 0;
  return FINAL_CHUNKED.test(value) ? 501 : 400;
}
