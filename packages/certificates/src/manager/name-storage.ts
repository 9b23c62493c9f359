import type { CertificateStorage } from '../storage/storage.js';
import { type CertificateLogger, type Entry, messageOf } from './entry.js';
import type { ServedCertificates } from './serve.js';
import {
  type CertificateMetadata,
  type LoadedCertificate,
  loadCertificate,
  loadMetadata,
  storeCertificate,
  storeMetadata,
} from './stored-certificate.js';

/** What storage holds for a name: the newest usable certificate, its metadata, and the first file that does not parse. */
export interface StorageRead {
  certificate: LoadedCertificate | null;
  meta: CertificateMetadata | null;
  /** A stored file that does not parse (or cannot be read): nothing is obtained over it. */
  error: unknown;
  /** The issuer folders whose certificate and key were read, and the one whose metadata was. */
  checked: { issuerIds: readonly string[]; metadataOf: string | undefined };
}

/** Options of {@link NameStorage}. */
export interface NameStorageOptions {
  storage: CertificateStorage;
  now: () => number;
  log: CertificateLogger;
  /** The issuer ids a name's certificate may be stored under, in order of preference. */
  issuerIds: (entry: Entry) => string[];
  /** Where a loaded certificate is served. */
  served: ServedCertificates;
}

/**
 * A managed name's files as the manager reads and writes them (the files
 * themselves are `stored-certificate.ts`): the newest certificate under
 * any of its issuers, the ARI state and failure history restored from the
 * metadata, each storage problem logged once.
 */
export class NameStorage {
  readonly #storage: CertificateStorage;
  readonly #now: () => number;
  readonly #log: CertificateLogger;
  readonly #issuerIds: (entry: Entry) => string[];
  readonly #served: ServedCertificates;

  constructor(options: NameStorageOptions) {
    this.#storage = options.storage;
    this.#now = options.now;
    this.#log = options.log;
    this.#issuerIds = options.issuerIds;
    this.#served = options.served;
  }

  /** The newest unexpired stored certificate of a name under any of its issuers, its metadata, and the first unreadable file. */
  async read(entry: Entry): Promise<StorageRead> {
    const now = this.#now();
    let best: LoadedCertificate | null = null;
    let error: unknown = null;
    const ids = this.#issuerIds(entry);
    for (const id of ids) {
      try {
        const read = await loadCertificate(this.#storage, id, entry.name);
        if (read.state === 'mismatched') {
          this.logProblem(entry, new Error(`${read.detail} (an interrupted write?): replaced by the next certificate`));
        } else if (read.state === 'loaded') {
          const loaded = read.certificate;
          if (loaded.notAfter > now && (best === null || loaded.notAfter > best.notAfter)) best = loaded;
        }
      } catch (err) {
        error ??= err;
        this.logProblem(entry, err);
      }
    }
    let meta: CertificateMetadata | null = null;
    const metaId = best?.issuerId ?? ids[0];
    if (metaId !== undefined) {
      try {
        meta = await loadMetadata(this.#storage, metaId, entry.name);
      } catch (err) {
        error ??= err;
        this.logProblem(entry, err);
      }
    }
    return { certificate: best, meta, error, checked: { issuerIds: ids, metadataOf: metaId } };
  }

  /** At setNames (or an on-demand name's first handshake): serve the stored certificate, restore its ARI state and failure history. */
  async load(entry: Entry): Promise<void> {
    const { certificate, meta } = await this.read(entry);
    if (entry.removed) return;
    if (certificate !== null) this.#served.install(entry, certificate);
    if (meta === null) return;
    entry.validationFailures = meta.validationFailures;
    if (certificate !== null && meta.ari !== null && meta.ari.certId === entry.current?.certId) {
      entry.ari = meta.ari;
    }
    // A failure run recorded after the served certificate still applies (a restart must not hammer the CA).
    if (meta.backoff !== null && (certificate === null || meta.backoff.lastFailureAt > certificate.notBefore)) {
      entry.backoff = meta.backoff;
      entry.retryOnce = meta.backoff.gaveUp;
    }
  }

  /** Takes the stored ARI state when it is about the served certificate. */
  restoreAri(entry: Entry, meta: CertificateMetadata | null): void {
    const current = entry.current;
    if (current === null || meta?.ari == null) return;
    if (meta.ari.certId === current.certId) entry.ari = meta.ari;
  }

  /** Stores a certificate just obtained, with fresh metadata (no ARI, no failures but the validation history). */
  async storeObtained(entry: Entry, obtained: LoadedCertificate, read?: StorageRead): Promise<void> {
    // What the attempt read under the lock without an error is not read again before the write.
    const checked =
      read === undefined || read.error !== null
        ? { certificate: false, metadata: false }
        : {
            certificate: read.checked.issuerIds.includes(obtained.issuerId),
            metadata: read.checked.metadataOf === obtained.issuerId,
          };
    await storeCertificate(
      this.#storage,
      obtained.issuerId,
      obtained,
      {
        name: entry.name,
        issuer: obtained.issuer,
        notBefore: obtained.notBefore,
        notAfter: obtained.notAfter,
        ari: null,
        lastError: null,
        nextAttemptAt: null,
        backoff: null,
        validationFailures: entry.validationFailures,
      },
      checked,
    );
  }

  /** Writes the name's metadata beside its certificate (best effort: a failure is logged). */
  async storeMetadata(entry: Entry, issuerId: string, nextAttemptAt: number | null = null): Promise<void> {
    try {
      await storeMetadata(this.#storage, issuerId, metadataOf(entry, nextAttemptAt));
    } catch (err) {
      this.logProblem(entry, err);
    }
  }

  /** Logs a storage problem of a name once (until a different one comes). */
  logProblem(entry: Entry, err: unknown): void {
    const message = messageOf(err);
    if (entry.loggedStorageProblem === message) return;
    entry.loggedStorageProblem = message;
    this.#log.error(
      { name: entry.name, code: (err as { code?: unknown }).code, error: message },
      `stored certificate files of ${entry.name} are not usable: ${message}`,
    );
  }
}

/** The name's metadata as the manager knows it now. */
function metadataOf(entry: Entry, nextAttemptAt: number | null): CertificateMetadata {
  const current = entry.current;
  return {
    name: entry.name,
    issuer: current?.issuer ?? null,
    notBefore: current?.notBefore ?? null,
    notAfter: current?.notAfter ?? null,
    ari: entry.ari,
    lastError: entry.backoff?.lastError ?? null,
    nextAttemptAt,
    backoff: entry.backoff,
    validationFailures: entry.validationFailures,
  };
}
