import { execFile } from 'node:child_process';
import { CertificatesError, CertificatesErrorCode } from '../errors.js';
import type { DnsProvider, TxtRecord } from './dns-provider.js';

/** Options of {@link ExecProvider}. */
export interface ExecProviderOptions {
  /** The program to run (an absolute path, or a name on PATH); run without a shell. */
  command: string;
  /** How long one run may take, ms (default 60,000); then it is killed and the step fails. */
  timeoutMs?: number;
  /** Extra environment for the program (default: proxyd's own). */
  env?: Readonly<Record<string, string>>;
}

/** The most of the program's stderr an error quotes, characters. */
const STDERR_QUOTED = 500;

/**
 * Runs a user's program to publish and remove the record, as lego's `exec`
 * provider does: `<command> present <fqdn>. <value>` and
 * `<command> cleanup <fqdn>. <value>`, with `PROXYD_DNS_FQDN`,
 * `PROXYD_DNS_ZONE`, `PROXYD_DNS_NAME` (relative to the zone),
 * `PROXYD_DNS_VALUE` and `PROXYD_DNS_TTL` in its environment. Exit status 0
 * is success; anything else (or a timeout) fails the step, quoting the end
 * of the program's stderr.
 */
export class ExecProvider implements DnsProvider {
  readonly name = 'exec';
  readonly #options: ExecProviderOptions;

  constructor(options: ExecProviderOptions) {
    this.#options = options;
  }

  appendTxt(record: TxtRecord): Promise<void> {
    return this.#run('present', record);
  }

  deleteTxt(record: TxtRecord): Promise<void> {
    return this.#run('cleanup', record);
  }

  #run(action: 'present' | 'cleanup', record: TxtRecord): Promise<void> {
    const { command } = this.#options;
    const timeoutMs = this.#options.timeoutMs ?? 60_000;
    return new Promise((resolve, reject) => {
      execFile(
        command,
        [action, `${record.fqdn}.`, record.value],
        {
          timeout: timeoutMs,
          killSignal: 'SIGKILL',
          maxBuffer: 1024 * 1024,
          env: {
            ...process.env,
            ...this.#options.env,
            PROXYD_DNS_FQDN: record.fqdn,
            PROXYD_DNS_ZONE: record.zone,
            PROXYD_DNS_NAME: record.relativeName,
            PROXYD_DNS_VALUE: record.value,
            PROXYD_DNS_TTL: String(record.ttl),
          },
        },
        (err, _stdout, stderr) => {
          if (err === null) return resolve();
          const e = err as NodeJS.ErrnoException & { killed?: boolean; code?: number | string };
          const why =
            e.killed === true
              ? `did not finish within ${timeoutMs / 1000} s (killed)`
              : typeof e.code === 'number'
                ? `exited with status ${e.code}`
                : `could not run: ${e.code ?? e.message}`;
          const tail = String(stderr).trim().slice(-STDERR_QUOTED);
          reject(
            new CertificatesError(
              CertificatesErrorCode.DNS_UPDATE_REFUSED,
              `exec: ${command} ${action} ${record.fqdn}. ${why}${tail === '' ? '' : `: ${tail}`}`,
            ),
          );
        },
      );
    });
  }
}
