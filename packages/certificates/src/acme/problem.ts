import { CertificatesError, CertificatesErrorCode } from '../errors.js';

/** An RFC 7807 problem document as an ACME CA sends it (RFC 8555 §6.7). */
export interface AcmeProblem {
  /** The problem type, e.g. `urn:ietf:params:acme:error:rateLimited`. */
  type: string;
  /** The CA's human-readable explanation ('' when it sent none). */
  detail: string;
  /** The HTTP status of the response, or the `status` field of a challenge error. */
  status: number;
  /** Per-identifier problems of a compound error (RFC 8555 §6.7.1), as sent. */
  subproblems?: AcmeProblem[];
}

/**
 * The cause of a `CERT_ACME_PROBLEM` or `CERT_ACME_VALIDATION_FAILED`
 * {@link CertificatesError}: the CA's problem document and its
 * `Retry-After`, for the caller's backoff.
 */
export class AcmeProblemError extends Error {
  /** The CA's problem document. */
  readonly problem: AcmeProblem;
  /** The CA's `Retry-After`, ms from when the answer arrived; undefined when it sent none. Not capped here. */
  readonly retryAfterMs: number | undefined;

  constructor(problem: AcmeProblem, retryAfterMs?: number) {
    super(formatProblem(problem));
    this.name = 'AcmeProblemError';
    this.problem = problem;
    this.retryAfterMs = retryAfterMs;
  }
}

/** `type (HTTP status): detail`, the form every ACME error message uses. */
export function formatProblem(problem: AcmeProblem): string {
  const detail = problem.detail === '' ? '' : `: ${problem.detail}`;
  return `${problem.type} (HTTP ${problem.status})${detail}`;
}

/** The problem document behind `err` (a `CertificatesError` caused by one), or undefined. */
export function acmeProblemOf(err: unknown): AcmeProblem | undefined {
  if (err instanceof AcmeProblemError) return err.problem;
  if (err instanceof CertificatesError && err.cause instanceof AcmeProblemError) return err.cause.problem;
  return undefined;
}

/** The problem type an ACME CA uses for a rejected anti-replay nonce. */
export const BAD_NONCE = 'urn:ietf:params:acme:error:badNonce';

/**
 * Reads a problem document from a response body, or undefined when `data`
 * is not one. `status` is the response's HTTP status (used when the body
 * has none).
 */
export function parseProblem(data: unknown, status: number): AcmeProblem | undefined {
  if (typeof data !== 'object' || data === null) return undefined;
  const record = data as Record<string, unknown>;
  if (typeof record.type !== 'string') return undefined;
  const problem: AcmeProblem = {
    type: record.type,
    detail: typeof record.detail === 'string' ? record.detail.replaceAll('\n', ' ') : '',
    status: typeof record.status === 'number' ? record.status : status,
  };
  if (Array.isArray(record.subproblems)) {
    const subproblems = record.subproblems
      .map((sub) => parseProblem(sub, problem.status))
      .filter((sub) => sub !== undefined);
    if (subproblems.length > 0) problem.subproblems = subproblems;
  }
  return problem;
}

/**
 * Runs `attempt`, and once more when the CA rejected its nonce
 * (`badNonce`): the CA acted on nothing, and acme-client takes a fresh nonce
 * for every signed request, so the repeat is safe. A second `badNonce` is
 * thrown.
 */
export async function retryBadNonceOnce<T>(attempt: () => Promise<T>): Promise<T> {
  try {
    return await attempt();
  } catch (err) {
    if (acmeProblemOf(err)?.type !== BAD_NONCE) throw err;
    return attempt();
  }
}

/** Wraps a problem document the CA answered `what` with into a `CERT_ACME_PROBLEM` error. */
export function problemError(what: string, problem: AcmeProblem, retryAfterMs?: number): CertificatesError {
  return new CertificatesError(
    CertificatesErrorCode.ACME_PROBLEM,
    `ACME CA refused ${what}: ${formatProblem(problem)}`,
    {
      cause: new AcmeProblemError(problem, retryAfterMs),
    },
  );
}
