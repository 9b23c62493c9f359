import type { IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import tls from 'node:tls';
import { CertificatesError, CertificatesErrorCode } from '../errors.js';
import { parseProblem, problemError } from './problem.js';

/** Options of {@link AcmeTransport}. */
export interface AcmeTransportOptions {
  /**
   * Extra PEM root(s) trusted for the CA's own API endpoint (the Proxyfile's
   * `acme_ca_root`), added to Node's bundled roots. Default: the bundled roots only.
   */
  caRootPem?: string | Buffer;
  /** How long one request may take, connect to last byte, ms (default 30,000). */
  timeoutMs?: number;
  /** The clock `Retry-After` dates are read against, ms since the epoch (default `Date.now`). */
  now?: () => number;
}

/** An answer of the CA, shaped as acme-client's HTTP client reads it (axios's `status`, `headers`, `data`). */
export interface AcmeResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body, or the body as text (a certificate chain), or '' for HEAD. */
  data: unknown;
}

/** The largest response body accepted, bytes: a certificate chain or an order is a few KiB. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;

/**
 * The HTTP client of one ACME client instance, replacing acme-client's
 * (a module-global axios instance whose agent and retry settings would apply
 * to every CA in the process). It gives per-CA trust, no hidden retries,
 * and errors that say what happened:
 *
 * - a network or TLS failure throws `CERT_ACME_UNREACHABLE` with the real
 *   reason (`connect ECONNREFUSED 127.0.0.1:14000`, `self-signed certificate
 *   in certificate chain`) and the Node error as `cause` (acme-client's own
 *   client turns these into "Cannot read properties of undefined (reading
 *   'config')");
 * - a problem document (status ≥ 400) throws `CERT_ACME_PROBLEM` with type,
 *   detail, status and `Retry-After` (see `AcmeProblemError`).
 */
export class AcmeTransport {
  readonly #agent: https.Agent;
  readonly #timeoutMs: number;
  readonly #now: () => number;

  constructor(options: AcmeTransportOptions = {}) {
    const ca = options.caRootPem === undefined ? undefined : [...tls.rootCertificates, options.caRootPem.toString()];
    this.#agent = new https.Agent({ keepAlive: true, ...(ca === undefined ? {} : { ca }) });
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#now = options.now ?? Date.now;
  }

  /**
   * Sends one request; `data` (an object) is sent as JSON. Resolves for
   * 1xx–3xx answers; throws a `CertificatesError` otherwise (see the class).
   */
  async request(url: string, method: string, options: { data?: unknown; headers?: Record<string, string> } = {}) {
    const verb = method.toUpperCase();
    const body = options.data === undefined ? undefined : Buffer.from(JSON.stringify(options.data));
    const response = await this.#send(url, verb, body, options.headers ?? {});
    if (response.status >= 400) {
      const what = `${verb} ${url}`;
      const problem = parseProblem(response.data, response.status) ?? {
        type: 'about:blank',
        detail: typeof response.data === 'string' ? response.data.slice(0, 200) : '',
        status: response.status,
      };
      throw problemError(what, problem, this.#retryAfterMs(response.headers['retry-after']));
    }
    return response;
  }

  /** Closes the kept-alive connections. */
  close(): void {
    this.#agent.destroy();
  }

  #send(url: string, method: string, body: Buffer | undefined, headers: Record<string, string>): Promise<AcmeResponse> {
    return new Promise((resolve, reject) => {
      const unreachable = (err: Error & { code?: string }) => {
        const reason =
          err.code !== undefined && !err.message.includes(err.code) ? `${err.message} (${err.code})` : err.message;
        reject(
          new CertificatesError(
            CertificatesErrorCode.ACME_UNREACHABLE,
            `ACME CA unreachable: ${method} ${url}: ${reason}`,
            {
              cause: err,
            },
          ),
        );
      };
      const req = https.request(
        url,
        {
          method,
          agent: this.#agent,
          headers: {
            ...headers,
            'user-agent': 'proxyd (acme-client 5.4.0)',
            // RFC 8555 §6.2: every POST is a JWS.
            ...(body === undefined
              ? {}
              : { 'content-type': 'application/jose+json', 'content-length': String(body.length) }),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > MAX_BODY_BYTES) {
              req.destroy(new Error(`response larger than ${MAX_BODY_BYTES} bytes`));
              return;
            }
            chunks.push(chunk);
          });
          res.on('error', unreachable);
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            const type = res.headers['content-type'] ?? '';
            let data: unknown = text;
            if (type.includes('json') && text !== '') {
              try {
                data = JSON.parse(text);
              } catch {
                reject(
                  new CertificatesError(
                    CertificatesErrorCode.ACME_ORDER_FAILED,
                    `ACME CA sent invalid JSON for ${method} ${url} (HTTP ${res.statusCode}): ${text.slice(0, 200)}`,
                  ),
                );
                return;
              }
            }
            resolve({ status: res.statusCode ?? 0, headers: res.headers, data });
          });
        },
      );
      req.setTimeout(this.#timeoutMs, () => {
        req.destroy(Object.assign(new Error(`no answer within ${this.#timeoutMs} ms`), { code: 'ETIMEDOUT' }));
      });
      req.on('error', unreachable);
      req.end(body);
    });
  }

  /** `Retry-After` (delta seconds or an HTTP date) as ms from now; undefined when absent or unreadable. */
  #retryAfterMs(header: string | undefined): number | undefined {
    if (header === undefined) return undefined;
    if (/^\d+$/.test(header.trim())) return Number(header.trim()) * 1000;
    const at = Date.parse(header);
    return Number.isNaN(at) ? undefined : Math.max(0, at - this.#now());
  }
}
