import { CertificatesError, CertificatesErrorCode } from '../errors.js';
import type { CertificateStorage } from '../storage/storage.js';

/** What proxyd keeps of an ACME account next to its key (`account.json`). */
export interface StoredAccount {
  /** The account URL the CA gave (the JWS `kid`). */
  url: string;
  /** The CA's directory URL. */
  directoryUrl: string;
  /** The contact email, or null when registered without one. */
  email: string | null;
  /** When the account was registered, ISO 8601. */
  createdAt: string;
}

/**
 * The storage folder of the account for one CA and email:
 * `acme/<ca>/<email or "default">`, where `<ca>` is the directory URL's host,
 * port and path with `/` and `:` turned into `-` (e.g.
 * `acme/acme-v02.api.letsencrypt.org-directory/me@example.com`). The folder
 * holds `account.json` ({@link StoredAccount}) and `account.key` (PEM, stored as a secret).
 */
export function accountFolder(directoryUrl: string, email: string | undefined): string {
  const url = new URL(directoryUrl);
  const ca = `${url.host}${url.pathname}`.replace(/\/+$/, '').replace(/[/:]/g, '-');
  const who = email === undefined ? 'default' : email.toLowerCase();
  return `acme/${safeSegment(ca)}/${safeSegment(who)}`;
}

/** Keeps a storage key segment to letters, digits and `.-_@+`; anything else becomes `_`. */
function safeSegment(segment: string): string {
  return segment.replace(/[^A-Za-z0-9.\-_@+]/g, '_').replace(/^\.+/, '_');
}

/** Parses a stored `account.json`; throws `CERT_ACME_ACCOUNT_INVALID` naming `key` when it does not parse. */
export function parseStoredAccount(key: string, raw: Buffer): StoredAccount {
  let value: unknown;
  try {
    value = JSON.parse(raw.toString('utf8'));
  } catch (err) {
    throw new CertificatesError(CertificatesErrorCode.ACME_ACCOUNT_INVALID, `${key} is not valid JSON; left as it is`, {
      cause: err,
    });
  }
  const record = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  if (typeof record.url !== 'string' || typeof record.directoryUrl !== 'string') {
    throw new CertificatesError(
      CertificatesErrorCode.ACME_ACCOUNT_INVALID,
      `${key} has no "url" and "directoryUrl" strings; left as it is`,
    );
  }
  return {
    url: record.url,
    directoryUrl: record.directoryUrl,
    email: typeof record.email === 'string' ? record.email : null,
    createdAt: typeof record.createdAt === 'string' ? record.createdAt : '',
  };
}

/** Loads `key` from storage as text, or null. */
export async function loadText(storage: CertificateStorage, key: string): Promise<string | null> {
  const value = await storage.load(key);
  return value === null ? null : value.toString('utf8');
}
