import http from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';

/**
 * The Docker Engine API version both runtimes speak: podman 4.3 serves 1.41,
 * Docker Engine 20.10 too.
 */
const API_VERSION = 'v1.41';

/** An answer of the Engine API. */
export interface EngineResponse {
  status: number;
  /** The body parsed as JSON when it is JSON, else the raw text ('' when empty). */
  body: unknown;
}

/** An error status of the Engine API, with the runtime's message. */
export class EngineApiError extends Error {
  constructor(
    readonly status: number,
    readonly method: string,
    readonly path: string,
    message: string,
  ) {
    super(`${method} ${path}: ${status} ${message}`);
    this.name = 'EngineApiError';
  }
}

/** One line of `GET /events`, as both runtimes send it (Docker's field names). */
export interface EngineEvent {
  Type: string;
  /** `create`, `start`, `die`, `stop`, `kill`, `destroy` (Docker) / `remove` (podman), `health_status`… */
  Action: string;
  Actor: { ID: string; Attributes: Record<string, string> };
  /** Unix seconds. */
  time: number;
  timeNano?: number;
}

/** A live `GET /events` subscription that keeps what it saw. */
export interface EventWatch {
  /** Every event received so far, oldest first. */
  readonly seen: readonly EngineEvent[];
  /**
   * The first event (already seen or still to come) that `match` accepts.
   * Rejects after `timeoutMs` (default 10 000) naming what was seen.
   */
  next(match: (event: EngineEvent) => boolean, timeoutMs?: number): Promise<EngineEvent>;
  /** Ends the subscription. */
  close(): void;
}

/** A minimal Docker Engine API client on a unix socket (node:http; no product library). */
export interface EngineApi {
  readonly socketPath: string;
  /** `method path` (without the version prefix) with a JSON or raw body; throws {@link EngineApiError} on status ≥ 400. */
  request(
    method: string,
    path: string,
    body?: unknown,
    options?: { timeoutMs?: number; contentType?: string },
  ): Promise<EngineResponse>;
  /** True when `GET /_ping` answers OK. */
  ping(): Promise<boolean>;
  /** Subscribes to container events (`type=container`; label filters are applied by the caller). */
  events(): Promise<EventWatch>;
}

function parse(text: string, contentType: string | undefined): unknown {
  if (text === '') return '';
  if (contentType?.includes('json')) {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  return text;
}

/** An {@link EngineApi} on `socketPath`. */
export function engineApi(socketPath: string): EngineApi {
  const request: EngineApi['request'] = (method, path, body, options = {}) =>
    new Promise((resolve, reject) => {
      const raw = body === undefined ? undefined : Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body));
      const headers: http.OutgoingHttpHeaders = {};
      if (raw !== undefined) {
        headers['content-type'] = options.contentType ?? 'application/json';
        headers['content-length'] = raw.length;
      }
      const req = http.request(
        { socketPath, method, path: `/${API_VERSION}${path}`, headers, timeout: options.timeoutMs ?? 30_000 },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => {
            const status = res.statusCode ?? 0;
            const parsed = parse(Buffer.concat(chunks).toString(), res.headers['content-type']);
            if (status >= 400) {
              const message =
                typeof parsed === 'object' && parsed !== null && 'message' in parsed
                  ? String(parsed.message)
                  : String(parsed);
              reject(new EngineApiError(status, method, path, message));
            } else resolve({ status, body: parsed });
          });
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: timed out`)));
      req.on('error', reject);
      req.end(raw);
    });

  const ping = () =>
    new Promise<boolean>((resolve) => {
      const req = http.get({ socketPath, path: '/_ping', timeout: 2000 }, (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      });
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', () => resolve(false));
    });

  const events = () =>
    new Promise<EventWatch>((resolve, reject) => {
      const seen: EngineEvent[] = [];
      const waiters = new Set<() => void>();
      const filters = encodeURIComponent(JSON.stringify({ type: ['container'] }));
      const req = http.get({ socketPath, path: `/${API_VERSION}/events?filters=${filters}` }, (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          reject(new Error(`GET /events: ${res.statusCode}`));
          return;
        }
        let buffer = '';
        res.on('data', (chunk: Buffer) => {
          buffer += chunk.toString();
          for (let end = buffer.indexOf('\n'); end >= 0; end = buffer.indexOf('\n')) {
            const line = buffer.slice(0, end).trim();
            buffer = buffer.slice(end + 1);
            if (line !== '') seen.push(JSON.parse(line) as EngineEvent);
          }
          for (const wake of waiters) wake();
        });
        // The stream ends when the runtime stops; `next` then times out.
        res.on('error', () => {});
        resolve({
          seen,
          async next(match, timeoutMs = 10_000) {
            const found = () => seen.find(match);
            const deadline = Date.now() + timeoutMs;
            for (let event = found(); ; event = found()) {
              if (event) return event;
              const left = deadline - Date.now();
              if (left <= 0) {
                const actions = seen.map((e) => `${e.Actor.Attributes.name ?? e.Actor.ID.slice(0, 12)}:${e.Action}`);
                throw new Error(`no matching event in ${timeoutMs} ms; seen: ${actions.join(' ') || 'none'}`);
              }
              let wake = () => {};
              await new Promise<void>((resolve) => {
                const timer = setTimeout(resolve, left);
                wake = () => {
                  clearTimeout(timer);
                  resolve();
                };
                waiters.add(wake);
              });
              waiters.delete(wake);
            }
          },
          close: () => req.destroy(),
        });
      });
      req.on('error', reject);
    });

  return { socketPath, request, ping, events };
}

/** Waits until `GET /_ping` answers, up to `timeoutMs`; false when it never did. */
export async function waitForPing(api: EngineApi, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await api.ping()) return true;
    await delay(25);
  }
  return false;
}
