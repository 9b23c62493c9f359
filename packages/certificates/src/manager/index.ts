/** The certificate manager's public names, re-exported by the package entry. */
export {
  type CertificateChange,
  type CertificateLogger,
  CertificateManager,
  type CertificateManagerOptions,
  type ManagedAcmeIssuer,
  type ManagedName,
  type OrderResult,
  type ServedCertificate,
} from './certificate-manager.js';
export { ChallengePreference, DEFAULT_CHALLENGE_ORDER } from './challenge-preference.js';
export { ChallengeTable } from './challenge-table.js';
export {
  type AskAnswer,
  ON_DEMAND_ASK_TIMEOUT_MS,
  ON_DEMAND_REFUSAL_TTL_MS,
  type OnDemandIssuer,
  type OnDemandOptions,
} from './on-demand.js';
export { realScheduler, type Scheduler, type TimerHandle } from './scheduler.js';
export {
  type AriMetadata,
  type CertificateMetadata,
  certificateKeys,
  LOCAL_ISSUER_ID,
  nameSegment,
} from './stored-certificate.js';
