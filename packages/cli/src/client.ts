import http from 'node:http';
import { parseHostPort } from '@proxyd/proxyfile';

/** Where and how to reach the admin API. */
export interface AdminClientOptions {
  /** TCP admin address `host:port` (IPv6 in brackets); default 127.0.0.1:6190. */
  admin?: string;
  /** Unix socket path; when set, used instead of TCP (no token needed). */
  socketPath?: string;
  /** Bearer token for TCP (PROXY_ADMIN_TOKEN). */
  token?: string;
  /** Give up after this many ms (default 10000). */
  timeoutMs?: number;
}

/** One admin API response. */
export interface AdminResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/**
 * Splits the admin address `host:port` (IPv6 in brackets) by the model's rule
 * (`parseHostPort`, re-exported by `@proxyd/proxyfile`): port 1-65535, a valid
 * host name, IPv4 or bracketed IPv6. The host comes back without brackets.
 */
export function adminTarget(value: string): { host: string; port: number } {
  const parsed = parseHostPort(value);
  if (!parsed.ok) throw new Error(`invalid admin address "${value}", expected host:port`);
  return parsed.value;
}

/**
 * The message an error response carries: the `error` of the JSON envelope,
 * else the body text (the reload parse error is plain text), else the status.
 */
export function errorMessage(res: AdminResponse): string {
  const type = String(res.headers['content-type'] ?? '');
  if (type.startsWith('application/json')) {
    try {
      const body = JSON.parse(res.body) as { error?: unknown };
      if (typeof body.error === 'string') return body.error;
    } catch {
      // fall through to the raw body
    }
  }
  return res.body.trim() || `HTTP ${res.status}`;
}

/** A small client of the proxyd admin API (spec §4). */
export class AdminClient {
  readonly #options: AdminClientOptions;

  constructor(options: AdminClientOptions = {}) {
    this.#options = options;
  }

  /** Sends one request; `body` is sent as JSON. Rejects only on transport errors. */
  request(method: string, path: string, body?: unknown): Promise<AdminResponse> {
    const { socketPath, token, timeoutMs = 10_000 } = this.#options;
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: http.OutgoingHttpHeaders = {};
    if (token && !socketPath) headers.authorization = `Bearer ${token}`;
    if (payload !== undefined) headers['content-type'] = 'application/json';
    const target = socketPath ? { socketPath } : adminTarget(this.#options.admin ?? '127.0.0.1:6190');
    return new Promise((resolve, reject) => {
      const req = http.request({ ...target, method, path, headers, timeout: timeoutMs }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
        res.on('error', reject);
      });
      req.on('timeout', () => req.destroy(new Error(`admin API did not answer within ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end(payload);
    });
  }

  /** POST /reload: the server's message, or throws with the server's error text. */
  async reload(): Promise<string> {
    const res = await this.request('POST', '/reload');
    if (res.status !== 200) throw new Error(`reload failed (${res.status}): ${errorMessage(res)}`);
    return (JSON.parse(res.body) as { message: string }).message;
  }
}
