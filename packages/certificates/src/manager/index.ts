/** The certificate manager's public names, re-exported by the package entry. */
export {
  type CertificateChange,
  type CertificateLogger,
  CertificateManager,
  type CertificateManagerOptions,
  type ManagedAcmeIssuer,
  type ManagedName,
  type OrderResult,
} from './certificate-manager.js';
export { ChallengeTable } from './challenge-table.js';
export { realScheduler, type Scheduler, type TimerHandle } from './scheduler.js';
export {
  type CertificateMetadata,
  certificateKeys,
  LOCAL_ISSUER_ID,
  nameSegment,
} from './stored-certificate.js';
