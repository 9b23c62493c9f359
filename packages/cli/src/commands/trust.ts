import type { Command } from 'commander';
import { resolveConfigPath } from '../config-path.js';

/** Options of `proxyd trust` and `proxyd untrust`. */
export interface TrustCommandOptions {
  /** Certificate directory (flag `--cert-dir`, else env `PROXY_CERT_DIR`; the daemon's default otherwise). */
  certDir?: string;
  /**
   * The Proxyfile (flag `--config`, else `PROXY_CONFIG`, else `./Proxyfile`
   * when there is one): when its global options say `storage redis`, the
   * local CA is the one the fleet shares in Redis, not the cert dir's.
   */
  config?: string;
  /** False with `--no-system`: leave the system store alone. */
  system: boolean;
  /** False with `--no-nss`: leave the NSS database alone. */
  nss: boolean;
}

/** What trust or untrust did, one step per place, as the daemon reports it. */
export interface TrustCommandReport {
  steps: ReadonlyArray<{ status: 'changed' | 'unchanged' | 'failed'; message: string }>;
}

/** The daemon side of `proxyd trust` / `proxyd untrust`. */
export interface TrustCommands {
  trust(options: TrustCommandOptions): Promise<TrustCommandReport>;
  untrust(options: TrustCommandOptions): Promise<TrustCommandReport>;
}

/**
 * `proxyd trust [--cert-dir <dir>] [--config <Proxyfile>] [--no-system] [--no-nss]` installs the
 * local CA's root (creating the CA when the cert dir has none; with a
 * Proxyfile whose `storage redis` names shared storage, the fleet's root in
 * Redis) into the
 * system store (Debian's ca-certificates) and the NSS database Chromium
 * reads (`$HOME/.pki/nssdb`); `proxyd untrust` removes exactly that. Each
 * step prints one line (failures to stderr, with what to run instead); the
 * exit status is 1 when any step failed, 0 otherwise — running either
 * twice changes nothing the second time.
 */
export function registerTrust(program: Command, daemon: TrustCommands): void {
  for (const name of ['trust', 'untrust'] as const) {
    program
      .command(name)
      .description(
        name === 'trust'
          ? "install the local CA's root in the system store and the NSS database (creates the CA if needed)"
          : "remove the local CA's root from the system store and the NSS database",
      )
      .option('--cert-dir <dir>', 'certificate storage directory (env PROXY_CERT_DIR, default /etc/proxy/certs)')
      .option('--config <path>', 'Proxyfile whose `storage redis` holds the CA (env PROXY_CONFIG, default ./Proxyfile)')
      .option('--no-system', 'leave the system store (/usr/local/share/ca-certificates) alone')
      .option('--no-nss', 'leave the NSS database ($HOME/.pki/nssdb) alone')
      .action(async (opts: TrustCommandOptions) => {
        const certDir = opts.certDir ?? process.env.PROXY_CERT_DIR;
        const config = resolveConfigPath(opts.config)?.path;
        const options = {
          system: opts.system,
          nss: opts.nss,
          ...(certDir === undefined ? {} : { certDir }),
          ...(config === undefined ? {} : { config }),
        };
        const report = await daemon[name](options);
        for (const step of report.steps) {
          if (step.status === 'failed') process.stderr.write(`proxyd: ${step.message}\n`);
          else process.stdout.write(`${step.message}\n`);
        }
        if (report.steps.some((step) => step.status === 'failed')) process.exitCode = 1;
      });
  }
}
