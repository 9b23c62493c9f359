import { randomBytes } from 'node:crypto';
import { chmod, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { AnalyticsError } from './errors.js';

/** Bytes of the beacon-token HMAC key. */
export const SECRET_BYTES = 32;
/** The key's file name in the daemon's state dir. */
export const SECRET_FILE_NAME = 'analytics.key';

/** The key and where it came from. */
export interface LoadedSecret {
  secret: Buffer;
  /** `loaded`: read from the file; `created`: no file, a new key written; `replaced`: the file was not a key (wrong size), a new one written. */
  origin: 'loaded' | 'created' | 'replaced';
}

async function writeKey(file: string): Promise<Buffer> {
  const secret = randomBytes(SECRET_BYTES);
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, secret, { mode: 0o600 });
  await rename(tmp, file);
  return secret;
}

/**
 * Reads the beacon-token key from `file` (exactly {@link SECRET_BYTES} raw
 * bytes), so tokens embedded in pages survive a restart. A missing file, or
 * one of another size, gets a new random key (written with mode 0600 through
 * a temporary file and a rename); an existing key readable by group or others
 * is narrowed to 0600. Throws ANALYTICS_KEY_FILE when the file cannot be read
 * or written (permissions, a directory in its place).
 */
export async function loadSecretFile(file: string): Promise<LoadedSecret> {
  try {
    let data: Buffer | null = null;
    try {
      data = await readFile(file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    if (data === null) return { secret: await writeKey(file), origin: 'created' };
    if (data.length !== SECRET_BYTES) return { secret: await writeKey(file), origin: 'replaced' };
    if (((await stat(file)).mode & 0o077) !== 0) await chmod(file, 0o600);
    return { secret: data, origin: 'loaded' };
  } catch (err) {
    throw new AnalyticsError('ANALYTICS_KEY_FILE', `${file}: ${(err as Error).message}`);
  }
}
