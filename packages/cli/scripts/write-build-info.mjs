// Writes dist/build-info.json ({ commit, dirty, built }) for `proxyd version`:
// the git commit the build was made from (null outside a git checkout) and
// the build time. Run by the package's `build` script after `tsc -b`; the
// package's turbo.json keeps turbo from restoring an old one from its cache.
// `node scripts/write-build-info.mjs <file>` writes elsewhere.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = process.argv[2] ? path.resolve(process.argv[2]) : path.join(root, 'dist', 'build-info.json');

function git(...args) {
  try {
    return execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null;
  }
}

const commit = git('rev-parse', 'HEAD');
const changes = commit === null ? null : git('status', '--porcelain', '--untracked-files=no');
const info = {
  commit: commit && /^[0-9a-f]{40}$/.test(commit) ? commit : null,
  dirty: changes === null ? null : changes !== '',
  built: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
};
mkdirSync(path.dirname(out), { recursive: true });
writeFileSync(out, `${JSON.stringify(info)}\n`);
