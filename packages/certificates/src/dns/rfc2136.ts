import * as dnsPacket from 'dns-packet';
import { CertificatesError, CertificatesErrorCode } from '../errors.js';
import {
  DNS_QUERY_TIMEOUT_MS,
  type DnsMessage,
  type DnsServer,
  exchange,
  formatDnsServer,
  messageId,
  rcodeOf,
} from './dns-client.js';
import type { DnsProvider, TxtRecord } from './dns-provider.js';
import { signMessage, type TsigKey, verifyResponse } from './tsig.js';

/** What dns-packet exports and its type definitions leave out: the record and name codecs. */
const codec = dnsPacket as unknown as {
  answer: { encode(record: dnsPacket.Answer): Buffer };
  name: { encodingLength(name: string): number };
};

/** RFC 2136 §2.4: class NONE marks "delete this RR" in the update section (dns-packet has no name for it). */
const CLASS_NONE = 254;
const OPCODE_UPDATE = 5;

/** Options of {@link Rfc2136Provider}. */
export interface Rfc2136Options {
  /** The primary server that accepts updates for the zone. */
  server: DnsServer;
  /** The TSIG key updates are signed with (none: the server must allow unsigned updates, e.g. by address). */
  key?: TsigKey;
  /** How long one update may wait for the server's answer, ms (default 5,000). */
  timeoutMs?: number;
  /** The clock, epoch ms (TSIG's time signed). */
  now?: () => number;
}

/**
 * RFC 2136 dynamic update, signed with TSIG (RFC 8945): works with BIND,
 * Knot, PowerDNS, Technitium and many routers. Adds a TXT value with an
 * "add to an RRset" update and removes it with "delete an RR from an
 * RRset" (class NONE), so values of other challenges at the same name stay.
 * Updates go over TCP; a signed answer's TSIG is verified.
 */
export class Rfc2136Provider implements DnsProvider {
  readonly name = 'rfc2136';
  readonly #options: Rfc2136Options;

  constructor(options: Rfc2136Options) {
    this.#options = options;
  }

  appendTxt(record: TxtRecord): Promise<void> {
    return this.#update(record, 'add');
  }

  deleteTxt(record: TxtRecord): Promise<void> {
    return this.#update(record, 'delete');
  }

  async #update(record: TxtRecord, what: 'add' | 'delete'): Promise<void> {
    const server = formatDnsServer(this.#options.server);
    const header = dnsPacket.encode({
      type: 'query',
      id: messageId(),
      // dns-packet encodes the opcode from `flags` only (bits 11-14): UPDATE is 5.
      flags: OPCODE_UPDATE << 11,
      questions: [{ name: record.zone, type: 'SOA', class: 'IN' }],
    });
    const rr = codec.answer.encode({
      name: record.fqdn,
      type: 'TXT',
      class: 'IN',
      ttl: what === 'add' ? record.ttl : 0,
      data: [record.value],
    } as dnsPacket.Answer);
    if (what === 'delete') rr.writeUInt16BE(CLASS_NONE, codec.name.encodingLength(record.fqdn) + 2);
    let message: Buffer = Buffer.concat([header, rr]);
    message.writeUInt16BE(1, 8); // NSCOUNT: the update section
    const key = this.#options.key;
    let requestMac: Buffer | null = null;
    if (key !== undefined) {
      const signed = signMessage(message, key, (this.#options.now ?? Date.now)());
      message = signed.signed;
      requestMac = signed.mac;
    }
    const verb = what === 'add' ? 'add' : 'delete';
    let answer: Buffer;
    try {
      answer = await exchange(this.#options.server, message, {
        tcp: true,
        timeoutMs: this.#options.timeoutMs ?? DNS_QUERY_TIMEOUT_MS,
      });
    } catch (err) {
      throw new CertificatesError(
        CertificatesErrorCode.DNS_UPDATE_REFUSED,
        `rfc2136: could not ${verb} TXT ${record.fqdn} at ${server}: ${(err as Error).message}`,
        { cause: err },
      );
    }
    const rcode = rcodeOf(dnsPacket.decode(answer) as DnsMessage);
    const verdict = key === undefined || requestMac === null ? null : verifyResponse(answer, requestMac, key);
    if (rcode !== 'NOERROR') {
      const tsig = verdict !== null && verdict.error !== 0 ? `, ${verdict.problem}` : '';
      const keyName = key === undefined ? 'without a TSIG key' : `with TSIG key "${key.name}" (${key.algorithm})`;
      throw new CertificatesError(
        CertificatesErrorCode.DNS_UPDATE_REFUSED,
        `rfc2136: ${server} refused to ${verb} TXT ${record.fqdn} in zone ${record.zone} ${keyName}: ${rcode}${tsig}`,
      );
    }
    if (verdict !== null && !verdict.verified) {
      throw new CertificatesError(
        CertificatesErrorCode.DNS_UPDATE_REFUSED,
        `rfc2136: the answer of ${server} to the update of TXT ${record.fqdn} is not trusted: ${verdict.problem}`,
      );
    }
  }
}
