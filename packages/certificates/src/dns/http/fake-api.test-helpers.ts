import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request a fake API saw. */
export interface SeenRequest {
  method: string;
  url: URL;
  headers: http.IncomingHttpHeaders;
  body: unknown;
}

/** What a fake API's handler answers. */
export interface FakeAnswer {
  status: number;
  json?: unknown;
  headers?: Record<string, string>;
}

/** A local HTTP server standing in for a DNS provider's API: records requests, answers through `handle`. */
export interface FakeApi {
  readonly baseUrl: string;
  readonly requests: SeenRequest[];
  close(): Promise<void>;
}

export async function startFakeApi(base: string, handle: (req: SeenRequest) => FakeAnswer): Promise<FakeApi> {
  const requests: SeenRequest[] = [];
  let origin = '';
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => {
      raw += chunk.toString();
    });
    req.on('end', () => {
      const seen: SeenRequest = {
        method: req.method ?? 'GET',
        url: new URL(req.url ?? '/', origin),
        headers: req.headers,
        body: raw === '' ? null : JSON.parse(raw),
      };
      requests.push(seen);
      const answer = handle(seen);
      const body = answer.json === undefined ? '' : JSON.stringify(answer.json);
      res.writeHead(answer.status, {
        ...(body === '' ? {} : { 'content-type': 'application/json' }),
        ...answer.headers,
      });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    baseUrl: `${origin}${base}`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** `items` cut into pages of `size` (1-based `page`), and how many pages there are. */
export function paginate<T>(items: T[], page: number, size: number): { items: T[]; pages: number } {
  return { items: items.slice((page - 1) * size, page * size), pages: Math.max(1, Math.ceil(items.length / size)) };
}
