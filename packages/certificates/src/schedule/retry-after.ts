/**
 * Parses an HTTP `Retry-After` value (RFC 9110 §10.2.3): delta-seconds or
 * an HTTP-date in IMF-fixdate form. Returns the absolute time it names, epoch ms (possibly in
 * the past), or null when the value is absent or does not parse. Callers
 * clamp it: a CA's value is honoured, never trusted without a cap.
 */
export function parseRetryAfter(value: string | null | undefined, now: number): number | null {
  if (value === null || value === undefined) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return now + Number(trimmed) * 1000;
  // Only IMF-fixdate, the one form senders must generate; Date.parse alone
  // would also take "2024" or "5 minutes".
  if (!/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/.test(trimmed)) return null;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? null : at;
}
