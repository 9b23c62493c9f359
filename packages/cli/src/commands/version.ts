import { readFileSync } from 'node:fs';
import type { Command } from 'commander';

/** What the build recorded (`scripts/write-build-info.mjs` writes `dist/build-info.json`). */
export interface BuildInfo {
  /** The git commit (40 hex digits) the build was made from; null when unknown. */
  commit: string | null;
  /** Whether tracked files differed from that commit; null when unknown. */
  dirty: boolean | null;
  /** Build time, ISO 8601 UTC to the second; null when unknown. */
  built: string | null;
}

/** Where the machine running the command stands. */
export interface Runtime {
  node: string;
  platform: string;
  arch: string;
}

const UNKNOWN: BuildInfo = { commit: null, dirty: null, built: null };

/**
 * Reads the build info beside the compiled CLI; everything null when the
 * file is absent (a run from sources, a bundle that left it out) or unreadable.
 */
export function readBuildInfo(file: URL = new URL('../build-info.json', import.meta.url)): BuildInfo {
  try {
    const raw = JSON.parse(readFileSync(file, 'utf8')) as Partial<Record<keyof BuildInfo, unknown>>;
    return {
      commit: typeof raw.commit === 'string' && /^[0-9a-f]{40}$/.test(raw.commit) ? raw.commit : null,
      dirty: typeof raw.dirty === 'boolean' ? raw.dirty : null,
      built: typeof raw.built === 'string' ? raw.built : null,
    };
  } catch {
    return UNKNOWN;
  }
}

/**
 * One line, as `caddy version` prints one: the version, the commit (12 hex
 * digits, `+dirty` when the tree had changes) and build time when known, the
 * Node.js version and the platform. E.g.
 * `v0.1.0 commit 1a2b3c4d5e6f built 2026-11-25T02:48:00Z node v24.21.0 linux/x64`.
 */
export function versionLine(
  version: string,
  info: BuildInfo,
  runtime: Runtime = { node: process.version, platform: process.platform, arch: process.arch },
): string {
  const commit = info.commit === null ? 'unknown' : `${info.commit.slice(0, 12)}${info.dirty ? '+dirty' : ''}`;
  const built = info.built === null ? '' : ` built ${info.built}`;
  return `v${version} commit ${commit}${built} node ${runtime.node} ${runtime.platform}/${runtime.arch}`;
}

/** `proxyd version`: prints {@link versionLine} (`--version` prints the bare version). */
export function registerVersion(program: Command, version: string, info: () => BuildInfo = readBuildInfo): void {
  program
    .command('version')
    .description('print the version with build information (commit, build time, Node.js, platform)')
    .action(() => {
      process.stdout.write(`${versionLine(version, info())}\n`);
    });
}
