import { setTimeout as delay } from 'node:timers/promises';
import { CertificatesError, CertificatesErrorCode } from '../../errors.js';

/** One answer of a provider's HTTP API: status, headers, and the body parsed as JSON (null when empty or not JSON). */
export interface ApiAnswer {
  status: number;
  headers: Headers;
  body: unknown;
  /** The body as text (for error messages). */
  text: string;
}

/** Options of one {@link JsonApi.request}. */
export interface ApiRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** A path under the API's base URL, or an absolute URL the API gave (a next-page link). */
  path: string;
  body?: unknown;
}

/** Default: how long one API request may take, ms. */
export const API_TIMEOUT_MS = 30_000;
/** A 429's `Retry-After` honoured up to this long, ms; longer is a failure for the backoff. */
const MAX_THROTTLE_WAIT_MS = 30_000;

/**
 * A provider's JSON HTTP API: the base URL, the credential header (never
 * in a message), a timeout per request, and one retry of a 429 after its
 * `Retry-After` (up to 30 s). `fail` builds the step's error from the
 * provider's own error shape.
 */
export class JsonApi {
  readonly #provider: string;
  readonly #base: string;
  readonly #headers: Record<string, string>;
  readonly #timeoutMs: number;
  readonly #sleep: (ms: number) => Promise<void>;

  constructor(options: {
    provider: string;
    baseUrl: string;
    headers: Record<string, string>;
    timeoutMs?: number | undefined;
    sleep?: ((ms: number) => Promise<void>) | undefined;
  }) {
    this.#provider = options.provider;
    this.#base = options.baseUrl.replace(/\/+$/, '');
    this.#headers = options.headers;
    this.#timeoutMs = options.timeoutMs ?? API_TIMEOUT_MS;
    this.#sleep = options.sleep ?? ((ms) => delay(ms));
  }

  /** Sends the request; a network error or timeout throws `CERT_DNS_UPDATE_REFUSED` naming the method and URL. */
  async request(req: ApiRequest): Promise<ApiAnswer> {
    const url = /^https?:\/\//.test(req.path) ? req.path : `${this.#base}${req.path}`;
    for (let attempt = 0; ; attempt++) {
      let response: Response;
      try {
        response = await fetch(url, {
          method: req.method,
          headers: {
            accept: 'application/json',
            ...(req.body === undefined ? {} : { 'content-type': 'application/json' }),
            ...this.#headers,
          },
          ...(req.body === undefined ? {} : { body: JSON.stringify(req.body) }),
          redirect: 'error',
          signal: AbortSignal.timeout(this.#timeoutMs),
        });
      } catch (err) {
        const cause = (err as Error & { cause?: Error }).cause;
        throw this.error(`${req.method} ${url} failed: ${cause?.message ?? (err as Error).message}`);
      }
      const text = await response.text();
      let body: unknown = null;
      try {
        body = text === '' ? null : JSON.parse(text);
      } catch {
        body = null;
      }
      if (response.status === 429 && attempt === 0) {
        const wait = retryAfterMs(response.headers.get('retry-after'));
        if (wait !== null && wait <= MAX_THROTTLE_WAIT_MS) {
          await this.#sleep(wait);
          continue;
        }
      }
      return { status: response.status, headers: response.headers, body, text };
    }
  }

  /** A `CERT_DNS_UPDATE_REFUSED` error prefixed with the provider's name. */
  error(message: string): CertificatesError {
    return new CertificatesError(CertificatesErrorCode.DNS_UPDATE_REFUSED, `${this.#provider}: ${message}`);
  }

  /** The error for an unexpected answer: what was asked, the status, and the provider's own words. */
  refused(what: string, answer: ApiAnswer, detail: string | null): CertificatesError {
    const words = detail ?? (answer.text.trim().slice(0, 300) || 'no body');
    return this.error(`${what}: HTTP ${answer.status}: ${words}`);
  }
}

function retryAfterMs(header: string | null): number | null {
  if (header === null) return null;
  if (/^\d+$/.test(header.trim())) return Number(header.trim()) * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? null : Math.max(0, at - Date.now());
}

/** `value` as an object, or an empty one. */
export function record(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}
