import { CertificatesError, CertificatesErrorCode } from '../errors.js';

/** The top-level folder of the cert dir that holds lock files; no key may lie under it. */
export const LOCKS_FOLDER = 'locks';

/** The longest segment of a key or a lock name, bytes (a file name on Linux is at most 255). */
const MAX_SEGMENT_BYTES = 200;

/**
 * The segments of a storage key (`certificates/acme/a.test/a.test.crt` →
 * four segments). A key is relative and `/`-separated; every segment is
 * non-empty, is not `.` or `..`, does not start with `.` (names starting
 * with `.` are the storage's temp files), holds no `\` or NUL, and is at
 * most 200 bytes; the first segment is not `locks`. Anything else throws
 * `CERT_STORAGE_INVALID_KEY`, so no key reaches outside the cert dir.
 */
export function keySegments(key: string): string[] {
  if (key === '') throw invalid(key, 'is empty');
  if (key.startsWith('/')) throw invalid(key, 'is absolute; keys are relative to the cert dir');
  const segments = key.split('/');
  for (const segment of segments) checkSegment(key, segment);
  if (segments[0] === LOCKS_FOLDER) throw invalid(key, `lies under "${LOCKS_FOLDER}/", which holds the lock files`);
  return segments;
}

/**
 * The segments of a `list` prefix: `''` (the whole storage) gives none;
 * one trailing `/` is allowed (`certificates/` is `certificates`);
 * otherwise the rules of {@link keySegments}.
 */
export function prefixSegments(prefix: string): string[] {
  if (prefix === '') return [];
  return keySegments(prefix.endsWith('/') ? prefix.slice(0, -1) : prefix);
}

/**
 * The file name of the lock `name` in the lock folder: any non-empty name
 * (`ca/local`, `cert-*.a.test`, even `..`) percent-encoded into one file
 * name (`ca%2Flocal.lock`), so no name reaches outside the folder. A name
 * empty or longer than 200 bytes once encoded throws
 * `CERT_STORAGE_INVALID_KEY`.
 */
export function lockFileName(name: string): string {
  if (name === '') throw invalid(name, 'is empty', 'lock name');
  const encoded = encodeURIComponent(name);
  if (Buffer.byteLength(encoded) > MAX_SEGMENT_BYTES) {
    throw invalid(name, `is longer than ${MAX_SEGMENT_BYTES} bytes once percent-encoded`, 'lock name');
  }
  return `${encoded}.lock`;
}

function checkSegment(key: string, segment: string, what = 'key'): void {
  if (segment === '') throw invalid(key, 'has an empty segment', what);
  if (segment === '.' || segment === '..') throw invalid(key, `has a "${segment}" segment`, what);
  if (segment.startsWith('.')) throw invalid(key, `has a segment starting with "." (${segment})`, what);
  if (segment.includes('\\') || segment.includes('\0')) throw invalid(key, 'contains "\\" or NUL', what);
  if (Buffer.byteLength(segment) > MAX_SEGMENT_BYTES) {
    throw invalid(key, `has a segment longer than ${MAX_SEGMENT_BYTES} bytes`, what);
  }
}

function invalid(key: string, problem: string, what = 'key'): CertificatesError {
  return new CertificatesError(
    CertificatesErrorCode.STORAGE_INVALID_KEY,
    `storage ${what} ${JSON.stringify(key)} ${problem}`,
  );
}
