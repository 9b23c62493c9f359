/**
 * Automatic HTTPS for proxyd. The public entry, curated: what the daemon
 * wires. See README.md for the contract.
 */
export type { CertificateStorage, LockOptions, StorageLock, StoreOptions } from './storage/storage.js';
