import { X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import type { Authorization, Client, Order } from 'acme-client';
import { CertificatesError, CertificatesErrorCode } from '../errors.js';
import { ariCertId, parseRenewalInfo, type RenewalInfo } from '../schedule/ari.js';
import type { CertificateStorage } from '../storage/storage.js';
import { accountFolder, loadText, parseStoredAccount, type StoredAccount } from './account.js';
import type { ChallengeSolver, ChallengeType, PresentedChallenge } from './challenge-solver.js';
import { type PollAnswer, pollUntilSettled } from './poll.js';
import { AcmeProblemError, acmeProblemOf, formatProblem, parseProblem, retryBadNonceOnce } from './problem.js';
import { type AcmeResponse, AcmeTransport } from './transport.js';

/**
 * acme-client, loaded at the first order or account: with about 150
 * modules of its own (axios, node-forge, asn1) it costs a daemon that
 * never talks to a CA ~10 MB (issue 32).
 */
let acmeClient: Promise<typeof import('acme-client')> | undefined;
const loadAcmeClient = () => {
  // A CommonJS module: Node gives its exports as named ones, a bundle (the npm package, the
  // executable) only as `default`.
  acmeClient ??= import('acme-client').then(
    (mod) => (mod as unknown as { default?: typeof import('acme-client') }).default ?? mod,
  );
  return acmeClient;
};

/** Options of {@link AcmeIssuer}. */
export interface AcmeIssuerOptions {
  /** The CA's directory URL (the Proxyfile's `acme_ca`). */
  directoryUrl: string;
  /** Where the account (key and URL) is kept and looked up. */
  storage: CertificateStorage;
  /** Answers the CA's challenges (HTTP-01 responses, TLS-ALPN-01 certificates). */
  solver: ChallengeSolver;
  /** The account's contact email (the Proxyfile's `email`). Default: an account without contact. */
  email?: string;
  /** PEM root(s) trusted for the CA's API endpoint besides Node's bundled roots (`acme_ca_root`). */
  caRootPem?: string | Buffer;
  /** External account binding for a new account (`acme_eab <key-id> <hmac-key>`, HMAC key base64url). */
  externalAccountBinding?: { keyId: string; hmacKey: string };
  /** The clock, ms since the epoch (default `Date.now`). */
  now?: () => number;
  /** Waits `ms` between polls (default a timer). */
  sleep?: (ms: number) => Promise<void>;
  /** First wait between two polls of an authorization or order, ms (default 1,000; doubles). */
  pollIntervalMs?: number;
  /** Longest wait between two polls, ms, and the cap on the CA's `Retry-After` while polling (default 10,000). */
  pollMaxIntervalMs?: number;
  /** How long one `obtain()` may wait for the CA to validate and issue, ms (default 300,000). */
  orderTimeoutMs?: number;
  /** How long one HTTP request to the CA may take, ms (default 30,000). */
  requestTimeoutMs?: number;
}

/** Options of {@link AcmeIssuer.obtain}. */
export interface ObtainOptions {
  /** The challenge to answer (default `http-01`). */
  challenge?: ChallengeType;
  /**
   * Publishes this order's `dns-01` records (the name's DNS provider, a
   * `Dns01Solver`). Default: the issuer's `solver`, which for the daemon's
   * challenge table refuses DNS-01.
   */
  dnsSolver?: ChallengeSolver;
  /** The certificate's key: ECDSA P-256 (default) or RSA 2048. */
  keyType?: 'ecdsa' | 'rsa';
  /**
   * The ARI identifier (`ariCertId`) of the certificate this order renews:
   * sent as the order's `replaces` (RFC 9773 §5). When the CA refuses the
   * order because of it, the order is placed once more without it.
   */
  replaces?: string;
}

/** A CA's answer to a renewalInfo request (RFC 9773 §4). */
export interface RenewalInfoAnswer {
  /** The certificate's ARI identifier, as asked. */
  certId: string;
  /** The parsed answer, or null when it did not parse (the lifetime rule then applies). */
  info: RenewalInfo | null;
  /** The response's `Retry-After` header as sent, or null (see `nextRenewalInfoPoll`). */
  retryAfter: string | null;
}

/** A certificate the CA issued. */
export interface IssuedCertificate {
  /** The names it covers, in the order asked. */
  names: string[];
  /** The chain, PEM, leaf first, as the CA sent it. */
  certificatePem: string;
  /** The leaf's private key, PEM (PKCS#8). Secret. */
  privateKeyPem: string;
  /** The leaf's notBefore, ms since the epoch. */
  notBefore: number;
  /** The leaf's notAfter, ms since the epoch. */
  notAfter: number;
  /** The directory URL of the CA that issued it. */
  directoryUrl: string;
  /** The order's URL. */
  orderUrl: string;
}

/** What acme-client keeps on an instance and does not type: the HTTP client we replace and the raw API. */
interface ClientInternals {
  http: { request: AcmeTransport['request']; maxBadNonceRetries: number };
  api: { apiRequest(url: string, payload: null, validStatusCodes: number[]): Promise<AcmeResponse> };
}

const ACCOUNT_DOES_NOT_EXIST = 'urn:ietf:params:acme:error:accountDoesNotExist';
/** Problems with which a CA refuses an order's `replaces` (RFC 9773 §5: `alreadyReplaced`; older CAs say `malformed`). */
const REPLACES_REFUSED: ReadonlySet<string> = new Set([
  'urn:ietf:params:acme:error:alreadyReplaced',
  'urn:ietf:params:acme:error:malformed',
]);

/**
 * Obtains certificates from one ACME CA (RFC 8555) for one account, driving
 * acme-client 5.4.0's low-level calls (never its `auto()`): account, order,
 * authorizations, challenges, finalize, download.
 *
 * - The account (ECDSA P-256 key and URL) is registered once per CA and
 *   email, stored under {@link accountFolder} (`account.key` as a secret),
 *   and reused by later processes; registration takes the storage lock of
 *   that folder. A CA that no longer knows the account (`accountDoesNotExist`)
 *   gets the same key registered again, once.
 * - HTTP goes through an {@link AcmeTransport} per issuer: trust per CA,
 *   none of acme-client's retries, real network/TLS causes.
 * - A `badNonce` is retried once with a fresh nonce; a `Retry-After` while
 *   polling is honoured up to `pollMaxIntervalMs`; rate limits and other
 *   problems are thrown (`CERT_ACME_PROBLEM`) for the caller's backoff.
 * - Every failure is a `CertificatesError`; a challenge the CA could not
 *   validate is `CERT_ACME_VALIDATION_FAILED` with the CA's problem document.
 *
 * It does not lock names or store certificates: the caller does.
 */
export class AcmeIssuer {
  readonly #options: AcmeIssuerOptions;
  readonly #transport: AcmeTransport;
  readonly #now: () => number;
  readonly #sleep: (ms: number) => Promise<void>;
  #client: Promise<Client> | undefined;
  #directory: Promise<Record<string, unknown>> | undefined;

  constructor(options: AcmeIssuerOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#sleep = options.sleep ?? ((ms) => delay(ms));
    this.#transport = new AcmeTransport({
      ...(options.caRootPem === undefined ? {} : { caRootPem: options.caRootPem }),
      ...(options.requestTimeoutMs === undefined ? {} : { timeoutMs: options.requestTimeoutMs }),
      now: this.#now,
    });
  }

  /** The CA's directory URL. */
  get directoryUrl(): string {
    return this.#options.directoryUrl;
  }

  /** The account's storage folder (see {@link accountFolder}). */
  get accountFolder(): string {
    return accountFolder(this.#options.directoryUrl, this.#options.email);
  }

  /**
   * The account URL, registering the account first if storage has none.
   * Throws `CERT_ACME_ACCOUNT_INVALID` when the stored account does not parse.
   */
  async accountUrl(): Promise<string> {
    return (await this.#account()).getAccountUrl();
  }

  /**
   * Orders a certificate for `names` (DNS names or IP addresses), answers
   * one challenge of `options.challenge` per authorization through the
   * solver (removing each again, success or not), and returns the issued
   * chain and key. A name the CA already authorized for this account needs
   * no challenge.
   */
  async obtain(names: readonly string[], options: ObtainOptions = {}): Promise<IssuedCertificate> {
    const unique = [...new Set(names.map((name) => name.toLowerCase()))];
    if (unique.length === 0) throw new TypeError('obtain() needs at least one name');
    const challengeType = options.challenge ?? 'http-01';
    const deadline = this.#now() + (this.#options.orderTimeoutMs ?? 300_000);
    try {
      return await this.#obtain(unique, challengeType, options, deadline);
    } catch (err) {
      if (acmeProblemOf(err)?.type !== ACCOUNT_DOES_NOT_EXIST) throw err;
      // The CA lost the account (a test CA restarted, or it was deactivated
      // elsewhere): register the same key again and retry once.
      this.#client = this.#register(await this.#loadKey(), true);
      return this.#obtain(unique, challengeType, options, deadline);
    }
  }

  /**
   * Asks the CA for the renewal window of `certPem` (RFC 9773 §4.1: an
   * unauthenticated GET of the directory's `renewalInfo` URL and the
   * certificate's {@link ariCertId}). Null when the CA's directory has no
   * `renewalInfo`. Throws `CERT_ARI_CERT_ID_UNAVAILABLE` for a certificate
   * without an ARI identifier, and the transport's errors
   * (`CERT_ACME_UNREACHABLE`, `CERT_ACME_PROBLEM`) when the request fails.
   */
  async renewalInfo(certPem: string): Promise<RenewalInfoAnswer | null> {
    const base = (await this.#loadDirectory()).renewalInfo;
    if (typeof base !== 'string' || base === '') return null;
    const certId = ariCertId(certPem);
    const response = await this.#transport.request(`${base.replace(/\/+$/, '')}/${certId}`, 'get');
    const retryAfter = response.headers['retry-after'];
    return { certId, info: parseRenewalInfo(response.data), retryAfter: retryAfter ?? null };
  }

  /** Closes the connections kept alive to the CA. */
  close(): void {
    this.#transport.close();
  }

  async #obtain(
    names: string[],
    challengeType: ChallengeType,
    options: ObtainOptions,
    deadline: number,
  ): Promise<IssuedCertificate> {
    const keyType = options.keyType ?? 'ecdsa';
    const replaces = options.replaces;
    const solver = challengeType === 'dns-01' ? (options.dnsSolver ?? this.#options.solver) : this.#options.solver;
    const client = await this.#account();
    const api = (client as unknown as ClientInternals).api;
    const identifiers = names.map((value) => ({ type: isIP(value) === 0 ? 'dns' : 'ip', value }));
    let order: Order;
    try {
      // acme-client posts createOrder's argument as the payload, so `replaces` rides along.
      order = await this.#step(() =>
        client.createOrder(replaces === undefined ? { identifiers } : ({ identifiers, replaces } as never)),
      );
    } catch (err) {
      const type = acmeProblemOf(err)?.type;
      if (replaces === undefined || type === undefined || !REPLACES_REFUSED.has(type)) throw err;
      // RFC 9773 §5: a CA may refuse `replaces` (already replaced, unknown certificate): order without it, once.
      order = await this.#step(() => client.createOrder({ identifiers }));
    }
    const authorizations = await this.#step(() => client.getAuthorizations(order));
    for (const authz of authorizations) {
      if (authz.status === 'valid') continue;
      await this.#authorize(client, api, authz, challengeType, solver, deadline);
    }

    const what = `order ${order.url}`;
    let settled = await this.#poll(api, order.url, what, deadline);
    if (settled.status !== 'ready' && settled.status !== 'valid') throw orderFailed(what, settled.value);

    const { crypto: acmeCrypto } = await loadAcmeClient();
    const key =
      keyType === 'rsa' ? await acmeCrypto.createPrivateRsaKey(2048) : await acmeCrypto.createPrivateEcdsaKey('P-256');
    const [, csr] = await acmeCrypto.createCsr({ altNames: names }, key);
    if (settled.status === 'ready') {
      order = await this.#step(() => client.finalizeOrder(order, csr));
      settled = await this.#poll(api, order.url, what, deadline);
      if (settled.status !== 'valid') throw orderFailed(what, settled.value);
    }
    const valid = { ...(settled.value as Order), url: order.url };
    const chain = await this.#step(() => client.getCertificate(valid));
    const leaf = new X509Certificate(chain);
    return {
      names,
      certificatePem: chain,
      privateKeyPem: key.toString('utf8'),
      notBefore: Date.parse(leaf.validFrom),
      notAfter: Date.parse(leaf.validTo),
      directoryUrl: this.#options.directoryUrl,
      orderUrl: order.url,
    };
  }

  async #authorize(
    client: Client,
    api: ClientInternals['api'],
    authz: Authorization,
    challengeType: ChallengeType,
    solver: ChallengeSolver,
    deadline: number,
  ): Promise<void> {
    const identifier = authz.identifier.value;
    const challenge = authz.challenges.find((c) => c.type === challengeType);
    if (challenge === undefined) {
      const offered = authz.challenges.map((c) => c.type).join(', ') || 'none';
      throw new CertificatesError(
        CertificatesErrorCode.ACME_CHALLENGE_UNAVAILABLE,
        `ACME CA offers no ${challengeType} challenge for ${identifier} (offered: ${offered})`,
      );
    }
    const keyAuthorization = await client.getChallengeKeyAuthorization(challenge);
    const presented = await this.#presentation(challengeType, authz, challenge.token, keyAuthorization);
    try {
      await solver.present(presented);
    } catch (err) {
      await this.#cleanUp(solver, presented);
      throw new CertificatesError(
        CertificatesErrorCode.ACME_CHALLENGE_SETUP_FAILED,
        `could not present the ${challengeType} challenge for ${identifier}: ${(err as Error).message}`,
        { cause: err },
      );
    }
    try {
      await this.#step(() => client.completeChallenge(challenge));
      const settled = await this.#poll(api, authz.url, `authorization of ${identifier}`, deadline);
      if (settled.status !== 'valid') {
        const answered = settled.value as Authorization;
        const failed = answered.challenges?.find((c) => c.type === challengeType) ?? challenge;
        const problem = parseProblem((failed as { error?: unknown }).error, 403) ?? {
          type: 'about:blank',
          detail: `authorization ${settled.status}`,
          status: 403,
        };
        throw new CertificatesError(
          CertificatesErrorCode.ACME_VALIDATION_FAILED,
          `ACME CA could not validate ${identifier} with ${challengeType}: ${formatProblem(problem)}`,
          { cause: new AcmeProblemError(problem) },
        );
      }
    } finally {
      await this.#cleanUp(solver, presented);
    }
  }

  async #presentation(
    type: ChallengeType,
    authz: Authorization,
    token: string,
    keyAuthorization: string,
  ): Promise<PresentedChallenge> {
    const identifier = authz.identifier.value;
    if (type === 'http-01') return { type, identifier, token, keyAuthorization };
    // acme-client's key authorization for dns-01 is already the record's digest.
    if (type === 'dns-01') return { type, identifier, wildcard: authz.wildcard === true, token, keyAuthorization };
    // An ECDSA key: acme-client would generate RSA 2048 for each challenge certificate.
    const { crypto: acmeCrypto } = await loadAcmeClient();
    const [key, cert] = await acmeCrypto.createAlpnCertificate(
      authz,
      keyAuthorization,
      await acmeCrypto.createPrivateEcdsaKey('P-256'),
    );
    return {
      type,
      identifier,
      token,
      keyAuthorization,
      certificatePem: cert.toString(),
      privateKeyPem: key.toString(),
    };
  }

  async #cleanUp(solver: ChallengeSolver, presented: PresentedChallenge): Promise<void> {
    try {
      await solver.cleanUp(presented);
    } catch {
      // A response left behind answers nothing the CA still asks; removal
      // failing must not hide the outcome of the order.
    }
  }

  /** One protocol request: a `badNonce` is retried once, any other failure thrown as a `CertificatesError`. */
  async #step<T>(request: () => Promise<T>): Promise<T> {
    try {
      return await retryBadNonceOnce(request);
    } catch (err) {
      if (err instanceof CertificatesError) throw err;
      // acme-client's own checks (e.g. an order without a Location header).
      throw new CertificatesError(
        CertificatesErrorCode.ACME_ORDER_FAILED,
        `ACME protocol error: ${(err as Error).message}`,
        {
          cause: err,
        },
      );
    }
  }

  #poll(api: ClientInternals['api'], url: string, what: string, deadline: number): Promise<PollAnswer<unknown>> {
    return pollUntilSettled(
      what,
      async () => {
        const response = await this.#step(() => api.apiRequest(url, null, [200]));
        const value = response.data as { status?: unknown };
        const retryAfter = response.headers['retry-after'];
        return {
          status: typeof value.status === 'string' ? value.status : 'unknown',
          value,
          retryAfterMs: retryAfter !== undefined && /^\d+$/.test(retryAfter) ? Number(retryAfter) * 1000 : undefined,
        };
      },
      {
        intervalMs: this.#options.pollIntervalMs ?? 1000,
        maxIntervalMs: this.#options.pollMaxIntervalMs ?? 10_000,
        deadline,
        now: this.#now,
        sleep: this.#sleep,
      },
    );
  }

  /** The CA's directory (cached for the issuer's life; a failed fetch is retried by the next call). */
  #loadDirectory(): Promise<Record<string, unknown>> {
    if (this.#directory === undefined) {
      const pending = this.#transport.request(this.#options.directoryUrl, 'get').then((response) => {
        if (typeof response.data !== 'object' || response.data === null) {
          throw new CertificatesError(
            CertificatesErrorCode.ACME_ORDER_FAILED,
            `ACME directory ${this.#options.directoryUrl} is not a JSON object`,
          );
        }
        return response.data as Record<string, unknown>;
      });
      this.#directory = pending;
      pending.catch(() => {
        if (this.#directory === pending) this.#directory = undefined;
      });
    }
    return this.#directory;
  }

  #account(): Promise<Client> {
    if (this.#client === undefined) {
      const pending = this.#loadOrRegister();
      this.#client = pending;
      // A failed registration is retried by the next call, not remembered.
      pending.catch(() => {
        if (this.#client === pending) this.#client = undefined;
      });
    }
    return this.#client;
  }

  async #loadOrRegister(): Promise<Client> {
    const stored = await this.#loadStored();
    if (stored !== null) return await this.#newClient(stored.key, stored.account.url);
    const lock = await this.#options.storage.lock(this.accountFolder);
    try {
      // Another process may have registered while this one waited for the lock.
      const again = await this.#loadStored();
      if (again !== null) return await this.#newClient(again.key, again.account.url);
      const existingKey = await loadText(this.#options.storage, `${this.accountFolder}/account.key`);
      const key =
        existingKey ?? (await (await loadAcmeClient()).crypto.createPrivateEcdsaKey('P-256')).toString('utf8');
      if (existingKey === null) {
        await this.#options.storage.store(`${this.accountFolder}/account.key`, key, { secret: true });
      }
      return await this.#register(key, false);
    } finally {
      await lock.release();
    }
  }

  async #loadStored(): Promise<{ key: string; account: StoredAccount } | null> {
    const jsonKey = `${this.accountFolder}/account.json`;
    const raw = await this.#options.storage.load(jsonKey);
    if (raw === null) return null;
    const account = parseStoredAccount(jsonKey, raw);
    const key = await loadText(this.#options.storage, `${this.accountFolder}/account.key`);
    if (key === null) {
      throw new CertificatesError(
        CertificatesErrorCode.ACME_ACCOUNT_INVALID,
        `${jsonKey} exists but ${this.accountFolder}/account.key does not; left as it is`,
      );
    }
    return { key, account };
  }

  async #loadKey(): Promise<string> {
    const key = await loadText(this.#options.storage, `${this.accountFolder}/account.key`);
    if (key === null) {
      throw new CertificatesError(
        CertificatesErrorCode.ACME_ACCOUNT_INVALID,
        `${this.accountFolder}/account.key is gone`,
      );
    }
    return key;
  }

  /** Registers `key` (new, or known to the CA: it answers with the existing account) and stores the URL. */
  async #register(key: string, lock: boolean): Promise<Client> {
    const held = lock ? await this.#options.storage.lock(this.accountFolder) : undefined;
    try {
      const client = await this.#newClient(key, undefined);
      const email = this.#options.email;
      await this.#step(() =>
        client.createAccount({
          termsOfServiceAgreed: true,
          ...(email === undefined ? {} : { contact: [`mailto:${email}`] }),
        }),
      );
      const account: StoredAccount = {
        url: client.getAccountUrl(),
        directoryUrl: this.#options.directoryUrl,
        email: email ?? null,
        createdAt: new Date(this.#now()).toISOString(),
      };
      await this.#options.storage.store(`${this.accountFolder}/account.json`, `${JSON.stringify(account, null, 2)}\n`);
      return client;
    } finally {
      await held?.release();
    }
  }

  async #newClient(key: string, accountUrl: string | undefined): Promise<Client> {
    const { Client } = await loadAcmeClient();
    const eab = this.#options.externalAccountBinding;
    const client = new Client({
      directoryUrl: this.#options.directoryUrl,
      accountKey: key,
      ...(accountUrl === undefined ? {} : { accountUrl }),
      ...(eab === undefined ? {} : { externalAccountBinding: { kid: eab.keyId, hmacKey: eab.hmacKey } }),
    });
    const internals = client as unknown as ClientInternals;
    // acme-client's HTTP goes through one module-global axios instance:
    // replace it on this instance for per-CA trust and real error causes.
    internals.http.request = (url, method, options) => this.#transport.request(url, method, options);
    // The transport throws every problem, badNonce included; #step retries it.
    internals.http.maxBadNonceRetries = 0;
    return client;
  }
}

function orderFailed(what: string, value: unknown): CertificatesError {
  const record = (value ?? {}) as { status?: unknown; error?: unknown };
  const problem = parseProblem(record.error, 403);
  const reason = problem === undefined ? `status ${String(record.status)}` : formatProblem(problem);
  return new CertificatesError(CertificatesErrorCode.ACME_ORDER_FAILED, `ACME ${what} failed: ${reason}`, {
    ...(problem === undefined ? {} : { cause: new AcmeProblemError(problem) }),
  });
}
