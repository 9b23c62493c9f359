/** The certificate manager's public names, re-exported by the package entry. */
export { CertificateManager, type CertificateManagerOptions, type NameChanges } from './certificate-manager.js';
export { ChallengePreference, DEFAULT_CHALLENGE_ORDER } from './challenge-preference.js';
export { ChallengeTable } from './challenge-table.js';
export type { CertificateLogger, ManagedAcmeIssuer, ManagedName } from './entry.js';
export type { OrderResult } from './obtain.js';
export {
  type AskAnswer,
  ON_DEMAND_ASK_TIMEOUT_MS,
  ON_DEMAND_REFUSAL_TTL_MS,
  type OnDemandIssuer,
  type OnDemandOptions,
} from './on-demand.js';
export { realScheduler, type Scheduler, type TimerHandle } from './scheduler.js';
export type { CertificateChange, ServedCertificate } from './serve.js';
export {
  type AriMetadata,
  type CertificateMetadata,
  certificateKeys,
  LOCAL_ISSUER_ID,
  nameSegment,
} from './stored-certificate.js';
