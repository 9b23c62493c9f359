/** Limits the schemas and the data plane share, kept apart from the schemas (no `typebox`). */

/**
 * Highest `under_attack` difficulty: 20 leading zero bits, about a million
 * hashes (~13 s at the ~80 k hashes/s measured in headless Chromium on a
 * loaded 2-core machine, WebCrypto or the pure-JS fallback alike). Each bit
 * doubles the work: 24 would be ~3.5 minutes, near the 5-minute lifetime of
 * a challenge, and more on a phone (proxy-core README, `under_attack`).
 */
export const UNDER_ATTACK_MAX_DIFFICULTY = 20;
