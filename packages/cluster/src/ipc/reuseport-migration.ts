import { readFileSync } from 'node:fs';

/** Linux's switch for handing a closing SO_REUSEPORT listener's queued connections to the others (5.14+). */
export const TCP_MIGRATE_REQ = '/proc/sys/net/ipv4/tcp_migrate_req';

/**
 * Whether the kernel migrates the connections queued on a closing
 * `SO_REUSEPORT` listener to the other listeners of its group
 * (`net.ipv4.tcp_migrate_req`). Off (Linux's default), a worker that stops
 * listening during a graceful stop resets the connections the kernel had
 * queued for it but it had not accepted yet: under load, a few clients get
 * a reset for a request the other workers would have answered
 * (`bench/shutdown` counted 23 per SIGTERM at ~1,000 connects/s).
 * `unknown`: not Linux, or a kernel without the switch.
 */
export function reusePortMigration(file = TCP_MIGRATE_REQ): 'on' | 'off' | 'unknown' {
  try {
    return readFileSync(file, 'utf8').trim() === '0' ? 'off' : 'on';
  } catch {
    return 'unknown';
  }
}
