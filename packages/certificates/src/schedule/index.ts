/** The maintenance schedule's public names (pure decisions, no I/O), re-exported by the package entry. */
export {
  ariCertId,
  nextRenewalInfoPoll,
  parseRenewalInfo,
  RENEWAL_INFO_DEFAULT_POLL_MS,
  RENEWAL_INFO_MAX_POLL_MS,
  RENEWAL_INFO_MIN_POLL_MS,
  type RenewalInfo,
  type RenewalWindow,
  selectAriRenewalTime,
} from './ari.js';
export {
  type BackoffFailure,
  type BackoffPolicy,
  type BackoffState,
  backoffDelay,
  DEFAULT_BACKOFF_POLICY,
  recordFailure,
} from './backoff.js';
export {
  ORDER_RATE_LIMIT,
  ORDER_RATE_WINDOW_MS,
  OrderRateLimiter,
  type OrderRateLimiterOptions,
} from './order-rate-limiter.js';
export {
  DEFAULT_RENEWAL_SPREAD,
  type LifetimeRenewalTimes,
  lifetimeRenewalTimes,
  RENEWAL_CHECK_INTERVAL_MS,
  type RenewalDecision,
  type RenewalInput,
  type RenewalReason,
  renewalDecision,
  renewalSpreadOf,
  type Validity,
} from './renewal-window.js';
export { parseRetryAfter } from './retry-after.js';
export { type CertificateStatus, type CertificateSummary, type SummaryInput, summarizeCertificate } from './status.js';
export {
  recordValidationFailure,
  VALIDATION_FAILURE_LIMIT,
  VALIDATION_FAILURE_WINDOW_MS,
  validationHeldUntil,
} from './validation-hold.js';
