import { AdminError, quote } from './errors.js';

/** Longest accepted `source` tag, in characters. */
export const MAX_SOURCE_LENGTH = 128;

const SOURCE = /^[\x21-\x7e]+$/;

/** The problem with a `source` tag (1–128 visible ASCII characters, no spaces), or undefined. */
export function sourceProblem(value: string): string | undefined {
  if (value.length === 0) return 'source is empty';
  if (value.length > MAX_SOURCE_LENGTH) return `${quote(value)} is longer than ${MAX_SOURCE_LENGTH} characters`;
  if (!SOURCE.test(value)) return `${quote(value)} must be visible ASCII characters without spaces`;
  return undefined;
}

/** Validates a `source` tag; throws `ADMIN_INVALID_SOURCE` with the reason. */
export function checkSource(value: string): string {
  const problem = sourceProblem(value);
  if (problem !== undefined) throw new AdminError('ADMIN_INVALID_SOURCE', problem);
  return value;
}
