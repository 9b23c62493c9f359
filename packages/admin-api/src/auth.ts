import { createHash, timingSafeEqual } from 'node:crypto';

const digest = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();

/**
 * Checks `Authorization: Bearer <token>` headers against the configured token
 * in constant time: both sides are hashed to 32 bytes first, so neither the
 * content nor the length of the token leaks through timing. With no token
 * configured every header is rejected (spec §5 rule 2).
 */
export function createBearerCheck(token: string | undefined): (header: string | undefined) => boolean {
  if (token === undefined || token.length === 0) return () => false;
  const expected = digest(token);
  return (header) => {
    if (header === undefined) return false;
    const m = /^bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
    if (!m) return false;
    return timingSafeEqual(digest(m[1] as string), expected);
  };
}
