/**
 * IP address text forms, as pure functions: the same answers as Node's
 * `net.isIPv4` / `net.isIPv6` (a test checks them against each other), so the
 * model needs no runtime module and loads in a browser bundle too.
 */

const DECIMAL_BYTE = /^(?:0|[1-9][0-9]{0,2})$/;
const HEX_GROUP = /^[0-9A-Fa-f]{1,4}$/;

/** Whether `text` is a dotted-quad IPv4 address: four decimal parts 0-255, no leading zeros. */
export function isIPv4(text: string): boolean {
  const parts = text.split('.');
  return parts.length === 4 && parts.every((part) => DECIMAL_BYTE.test(part) && Number(part) <= 255);
}

/**
 * How many 16-bit groups `text` spells (`a:b`, the last one may be a dotted
 * quad worth two), or -1 when it is not such a list. Empty text is none.
 */
function groupCount(text: string, mayEndInIPv4: boolean): number {
  if (text === '') return 0;
  const parts = text.split(':');
  let groups = 0;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i] as string;
    if (HEX_GROUP.test(part)) groups += 1;
    else if (mayEndInIPv4 && i === parts.length - 1 && isIPv4(part)) groups += 2;
    else return -1;
  }
  return groups;
}

/**
 * Whether `text` is an IPv6 address in one of the text forms of RFC 4291
 * §2.2: eight groups of 1-4 hex digits, `::` once for one or more zero
 * groups, the last 32 bits optionally a dotted quad. No brackets and no
 * zone (`%eth0`): callers refuse a zone, which names an interface of one
 * machine only.
 */
export function isIPv6(text: string): boolean {
  const halves = text.split('::');
  if (halves.length > 2) return false;
  if (halves.length === 1) return groupCount(text, true) === 8;
  const head = groupCount(halves[0] as string, false);
  const tail = groupCount(halves[1] as string, true);
  return head >= 0 && tail >= 0 && head + tail <= 7;
}
