import { describe, expect, it } from 'vitest';
import { responseHeaders } from './response-headers.js';

describe('responseHeaders', () => {
  it('lowercases names, drops hop-by-hop and Connection-named lines, keeps cookies apart and joins repeats', () => {
    const headers = responseHeaders(
      [
        'Content-Type',
        'text/html',
        'content-type',
        'text/plain',
        'Set-Cookie',
        'a=1',
        'set-cookie',
        'b=2',
        'Cache-Control',
        'public',
        'Cache-Control',
        'max-age=60',
        'ETag',
        '"x"',
        'X-Custom-Thing',
        'yes',
        'Connection',
        'keep-alive, X-Secret',
        'X-Secret',
        'hidden',
        'Keep-Alive',
        'timeout=5',
        'Transfer-Encoding',
        'chunked',
        'Trailer',
        'Expires',
        'Upgrade',
        'h2c',
      ],
      null,
    );
    expect(headers).toEqual({
      'content-type': 'text/html',
      'set-cookie': ['a=1', 'b=2'],
      'cache-control': 'public, max-age=60',
      etag: '"x"',
      'x-custom-thing': 'yes',
    });
  });
});
