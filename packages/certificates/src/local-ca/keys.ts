import { createPrivateKey, createPublicKey, webcrypto } from 'node:crypto';
import { PemConverter } from './x509.js';

/** The WebCrypto provider every local-CA operation uses (Node's own; the repo compiles without DOM types). */
export const crypto = webcrypto;
/** A WebCrypto key (Node's type). */
export type CryptoKey = webcrypto.CryptoKey;
/** A WebCrypto key pair (Node's type). */
export type CryptoKeyPair = webcrypto.CryptoKeyPair;

/** ECDSA P-256 with SHA-256: the one key and signature algorithm of the local CA. */
export const EC_KEY_ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256' } as const;
/** The signature algorithm for certificates signed by a local-CA key. */
export const EC_SIGNING_ALGORITHM = { name: 'ECDSA', hash: 'SHA-256' } as const;

/** A fresh ECDSA P-256 key pair; the private key is extractable so it can be stored. */
export async function generateKeyPair(): Promise<CryptoKeyPair> {
  return crypto.subtle.generateKey(EC_KEY_ALGORITHM, true, ['sign', 'verify']);
}

/** The private key as PKCS #8 PEM (`-----BEGIN PRIVATE KEY-----`), what Node's `tls` accepts. */
export async function exportPrivateKeyPem(key: CryptoKey): Promise<string> {
  const der = await crypto.subtle.exportKey('pkcs8', key);
  return PemConverter.encode(der, 'PRIVATE KEY');
}

/**
 * Imports a PKCS #8 PEM ECDSA P-256 private key for signing. Rejects when
 * the PEM does not parse or is not a P-256 key.
 */
export async function importSigningKey(pem: string): Promise<CryptoKey> {
  // Node's parser accepts PKCS #8 and SEC1 and reports what is wrong.
  const der = createPrivateKey(pem).export({ type: 'pkcs8', format: 'der' });
  return crypto.subtle.importKey('pkcs8', der, EC_KEY_ALGORITHM, false, ['sign']);
}

/** The DER SubjectPublicKeyInfo of the public half of a PEM private key. */
export function publicKeyOf(privateKeyPem: string): Buffer {
  return createPublicKey(createPrivateKey(privateKeyPem)).export({ type: 'spki', format: 'der' });
}
