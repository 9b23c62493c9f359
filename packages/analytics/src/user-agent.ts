import Bowser from 'bowser';
import { isbot } from 'isbot';
import { hashString } from './hash.js';

/** A device class of the `devices` breakdown. */
export type DeviceClass = 'desktop' | 'mobile' | 'tablet' | 'other';

/** What a User-Agent header says, as the rollups count it. */
export interface UserAgentInfo {
  /** A bot: `isbot` recognises it, bowser classes it as a bot, or the header is missing or empty. */
  readonly bot: boolean;
  /** Browser name as bowser spells it (`Chrome`, `Firefox`, `Safari`, `Microsoft Edge`…), or `(unknown)`. */
  readonly browser: string;
  /** Operating system name as bowser spells it (`Windows`, `macOS`, `iOS`, `Android`, `Linux`…), or `(unknown)`. */
  readonly os: string;
  /** bowser's platform type; TVs, consoles and anything unknown are `other`. */
  readonly device: DeviceClass;
  /** 32-bit hash of the (cut) header, mixed into the visitor hash. */
  readonly hash: number;
}

/** The key of a name bowser does not know. */
export const UNKNOWN = '(unknown)';
/**
 * Longest User-Agent parsed and cached, characters: a longer header is cut
 * there first (real browsers send 100–250; the cut bounds the parse and the
 * cache's memory).
 */
export const MAX_USER_AGENT_LENGTH = 512;
/** Distinct User-Agent strings kept parsed (default). */
export const USER_AGENT_CACHE_SIZE = 4096;

const MISSING: UserAgentInfo = Object.freeze({
  bot: true,
  browser: UNKNOWN,
  os: UNKNOWN,
  device: 'other',
  hash: hashString(''),
});

/**
 * Classifies one User-Agent header with `isbot` (bots) and bowser (browser,
 * OS, device class), uncached: about 15 µs (README, "Cost").
 */
export function classifyUserAgent(header: string | undefined): UserAgentInfo {
  if (header === undefined || header.length === 0) return MISSING;
  const ua = header.length > MAX_USER_AGENT_LENGTH ? header.slice(0, MAX_USER_AGENT_LENGTH) : header;
  const parsed = Bowser.parse(ua);
  const type = parsed.platform.type;
  const os = parsed.os.name || UNKNOWN;
  let device: DeviceClass = 'other';
  if (type === 'desktop' || type === 'mobile' || type === 'tablet') device = type;
  // bowser gives ChromeOS no platform: a Chromebook is a desktop.
  else if (type === undefined && os === 'Chrome OS') device = 'desktop';
  return {
    bot: type === 'bot' || isbot(ua),
    browser: parsed.browser.name || UNKNOWN,
    os,
    device,
    hash: hashString(ua),
  };
}

/**
 * Parsed User-Agents by header string, bounded: two generations of at most
 * `size / 2` entries each. A hit in the young generation is one Map lookup;
 * a hit in the old one moves the entry to the young; when the young fills,
 * it becomes the old and the old is dropped. So the strings in use stay
 * parsed, and at most `size` are kept (an LRU without per-hit reordering).
 */
export class UserAgentCache {
  readonly #half: number;
  #young = new Map<string, UserAgentInfo>();
  #old = new Map<string, UserAgentInfo>();
  #parses = 0;

  /** @param size entries kept at most (default {@link USER_AGENT_CACHE_SIZE}) */
  constructor(size = USER_AGENT_CACHE_SIZE) {
    this.#half = Math.max(1, size >>> 1);
  }

  /** Headers parsed so far (cache misses). */
  get parses(): number {
    return this.#parses;
  }

  /** Entries held. */
  get size(): number {
    return this.#young.size + this.#old.size;
  }

  /** The classification of `header`, parsed at most once while it stays in use. */
  get(header: string | undefined): UserAgentInfo {
    if (header === undefined || header.length === 0) return MISSING;
    // The cut header is the key: a long header costs a slice, and the cache's memory stays bounded.
    if (header.length > MAX_USER_AGENT_LENGTH) header = header.slice(0, MAX_USER_AGENT_LENGTH);
    let info = this.#young.get(header);
    if (info !== undefined) return info;
    info = this.#old.get(header);
    if (info === undefined) {
      info = classifyUserAgent(header);
      this.#parses++;
    } else this.#old.delete(header);
    if (this.#young.size >= this.#half) {
      this.#old = this.#young;
      this.#young = new Map();
    }
    this.#young.set(header, info);
    return info;
  }
}
