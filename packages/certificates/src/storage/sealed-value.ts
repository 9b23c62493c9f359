import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { CertificatesError, CertificatesErrorCode } from '../errors.js';

/**
 * The first bytes of a sealed value: NUL, `pxe`, format 1. No PEM (`-`),
 * JSON (`{`) or DER (`0x30`) value starts with NUL, so a value stored
 * before encryption was turned on is told apart and still reads.
 */
const MAGIC = Buffer.from([0, 0x70, 0x78, 0x65, 1]);
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
/** The length of an AES-256 key, bytes. */
export const ENCRYPTION_KEY_BYTES = 32;

/**
 * Seals `value` with AES-256-GCM under `key` (32 bytes): magic, a random
 * 96-bit nonce, the 128-bit tag, the ciphertext. The storage key is the
 * additional authenticated data, so a sealed value copied under another
 * key does not open.
 */
export function seal(key: Buffer, storageKey: string, value: Buffer): Buffer {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG_BYTES });
  cipher.setAAD(Buffer.from(storageKey, 'utf8'));
  const body = Buffer.concat([cipher.update(value), cipher.final()]);
  return Buffer.concat([MAGIC, nonce, cipher.getAuthTag(), body]);
}

/** Whether `stored` is a sealed value (starts with the magic). */
export function isSealed(stored: Buffer): boolean {
  return stored.length >= MAGIC.length && stored.subarray(0, MAGIC.length).equals(MAGIC);
}

/**
 * The plaintext of `stored` under `storageKey`: a value that is not sealed
 * is returned as it is (written before encryption was configured). A
 * sealed value without a key, one that does not authenticate (tampered,
 * moved to another key, or sealed with another encryption key) throws
 * `CERT_STORAGE_DECRYPT_FAILED`.
 */
export function open(key: Buffer | null, storageKey: string, stored: Buffer): Buffer {
  if (!isSealed(stored)) return stored;
  if (key === null) {
    throw failed(storageKey, 'it is encrypted and no encryption_key_file is configured');
  }
  const start = MAGIC.length;
  if (stored.length < start + NONCE_BYTES + TAG_BYTES) throw failed(storageKey, 'it is shorter than a sealed value');
  const nonce = stored.subarray(start, start + NONCE_BYTES);
  const tag = stored.subarray(start + NONCE_BYTES, start + NONCE_BYTES + TAG_BYTES);
  const decipher = createDecipheriv('aes-256-gcm', key, nonce, { authTagLength: TAG_BYTES });
  decipher.setAAD(Buffer.from(storageKey, 'utf8'));
  decipher.setAuthTag(tag);
  try {
    return Buffer.concat([decipher.update(stored.subarray(start + NONCE_BYTES + TAG_BYTES)), decipher.final()]);
  } catch (err) {
    throw failed(
      storageKey,
      'it does not authenticate: it was altered, or sealed with another encryption key or under another key',
      err,
    );
  }
}

/**
 * An encryption key from the bytes of `encryption_key_file`: 32 raw bytes,
 * or 64 hex digits, or 32 bytes in base64 (surrounding whitespace ignored).
 */
export function parseEncryptionKey(file: string, content: Buffer): Buffer {
  if (content.length === ENCRYPTION_KEY_BYTES) return content;
  const text = content.toString('utf8').trim();
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, 'hex');
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(text)) {
    const bytes = Buffer.from(text, text.includes('-') || text.includes('_') ? 'base64url' : 'base64');
    if (bytes.length === ENCRYPTION_KEY_BYTES) return bytes;
  }
  throw new CertificatesError(
    CertificatesErrorCode.STORAGE_CONFIG_INVALID,
    `encryption_key_file ${file} holds no 256-bit key: write 32 random bytes, as raw bytes, 64 hex digits or base64 (e.g. openssl rand -base64 32 > ${file})`,
  );
}

function failed(storageKey: string, why: string, cause?: unknown): CertificatesError {
  return new CertificatesError(
    CertificatesErrorCode.STORAGE_DECRYPT_FAILED,
    `stored value ${JSON.stringify(storageKey)} cannot be decrypted: ${why}; it is left as it is`,
    cause === undefined ? undefined : { cause },
  );
}
