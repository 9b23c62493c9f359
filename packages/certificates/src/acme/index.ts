/** The ACME layer's public names, re-exported by the package entry. */
export { accountFolder, type StoredAccount } from './account.js';
export {
  AcmeIssuer,
  type AcmeIssuerOptions,
  type IssuedCertificate,
  type ObtainOptions,
  type RenewalInfoAnswer,
} from './acme-issuer.js';
export type {
  ChallengeSolver,
  ChallengeType,
  Dns01Challenge,
  Http01Challenge,
  PresentedChallenge,
  TlsAlpn01Challenge,
} from './challenge-solver.js';
export { type AcmeProblem, AcmeProblemError, acmeProblemOf } from './problem.js';
