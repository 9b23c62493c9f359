// @peculiar/x509 2.x resolves its ASN.1 and algorithm providers through
// tsyringe, which needs a Reflect metadata polyfill loaded before it.
import 'reflect-metadata';

/** @peculiar/x509, with the Reflect polyfill it needs loaded first: the only way this folder imports it. */
export {
  AuthorityKeyIdentifierExtension,
  BasicConstraintsExtension,
  ExtendedKeyUsage,
  ExtendedKeyUsageExtension,
  KeyUsageFlags,
  KeyUsagesExtension,
  PemConverter,
  SubjectAlternativeNameExtension,
  SubjectKeyIdentifierExtension,
  X509Certificate,
  X509CertificateGenerator,
} from '@peculiar/x509';
