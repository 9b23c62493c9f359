import http from 'node:http';
import { request, type Target } from './proxyd.js';

/** The admin token e2e tests start proxyd with (`PROXY_ADMIN_TOKEN`; 32 characters: a shorter one makes it warn at start). */
export const ADMIN_TOKEN = 'e2e-admin-token-0123456789abcdef';

/** One admin API call over TCP with the e2e token; `body` is sent as JSON. `target`: a port on 127.0.0.1, or host and port. */
export function adminCall(
  target: Target,
  method: string,
  path: string,
  body?: unknown,
  token: string | null = ADMIN_TOKEN,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  const headers: http.OutgoingHttpHeaders = {};
  if (token !== null) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  return request(target, { method, path, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
}

/** One admin API call over a Unix socket (no token). */
export function socketCall(
  socketPath: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(
      {
        socketPath,
        method,
        path,
        headers: payload === undefined ? {} : { 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** Polls `check` every 20 ms until it returns true or `timeoutMs` passes. */
export async function waitUntil(check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`condition not met within ${timeoutMs} ms`);
}

/** The JSON log lines a proxyd wrote (non-JSON lines skipped). */
export function logLines(output: string): Array<Record<string, unknown>> {
  const lines: Array<Record<string, unknown>> = [];
  for (const line of output.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      lines.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      // a partial line at the end of the buffer
    }
  }
  return lines;
}
