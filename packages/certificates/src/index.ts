/**
 * Automatic HTTPS for proxyd. The public entry, curated: what the daemon
 * wires. See README.md for the contract.
 */

export * from './acme/index.js';
export { CertificatesError, CertificatesErrorCode } from './errors.js';
export {
  isLocalName,
  LocalCa,
  type LocalCaCertificate,
  type LocalCaIssueOptions,
  LocalCaKeys,
  type LocalCaOptions,
} from './local-ca/local-ca.js';
export * from './manager/index.js';
export * from './schedule/index.js';
export { DEFAULT_CERT_DIR, FileStorage, type FileStorageOptions } from './storage/file-storage.js';
export type { CertificateStorage, LockOptions, StorageLock, StoreOptions } from './storage/storage.js';
