#!/usr/bin/env node
// `pnpm build:npm`: the publishable npm package `proxyd`, one tarball with no
// dependencies to fetch, from the built daemon (run `pnpm build` first; the
// root script does).
//
//   dist/npm/                     the package directory (what `npm publish` would take)
//   dist/proxyd-<version>.tgz     `npm pack` of it: `npm install -g ./dist/proxyd-<version>.tgz`
//
// The package: `dist/main.js` (the `proxyd` bin) and `dist/worker.js` (the
// module the primary forks per data-plane worker, `./worker.js` beside the
// primary's code) with their shared chunks, all in one directory whose
// parent is the package root, so each `new URL(…, import.meta.url)` of the
// sources finds its file (`RUNTIME_FILES` in bundle.mjs): `../package.json`
// (the version), `../dist/browser/a.js` (the analytics script), `../dist/ui/*`
// (the dashboard's page, script and style),
// `../build-info.json` (`proxyd version`). The GeoIP database is a bundled
// dependency (in the tarball, never fetched), found by Node's resolution as
// in the monorepo.
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  appPackage,
  bundle,
  geoipDependency,
  RUNTIME_FILES,
  releaseDir,
  repoRoot,
  thirdPartyNotices,
} from './bundle.mjs';

const started = performance.now();
const app = appPackage();
const out = path.join(releaseDir, 'npm');
rmSync(out, { recursive: true, force: true });

const { metafile } = await bundle({
  entryPoints: { main: 'dist/main.js', worker: 'dist/cluster/worker.js' },
  outdir: path.join(out, 'dist'),
  format: 'esm',
  splitting: true,
  // CommonJS dependencies bundled into ES modules still call require and read
  // __dirname (ssh2, acme-client's dependencies): give each output file its own.
  banner: {
    js: [
      "import { createRequire as __proxydCreateRequire } from 'node:module';",
      "import { fileURLToPath as __proxydFileURLToPath } from 'node:url';",
      'const require = __proxydCreateRequire(import.meta.url);',
      'const __filename = __proxydFileURLToPath(import.meta.url);',
      "const __dirname = __proxydFileURLToPath(new URL('.', import.meta.url));",
    ].join(' '),
  },
});
chmodSync(path.join(out, 'dist/main.js'), 0o755);

for (const { npm, from } of RUNTIME_FILES) {
  const to = path.join(out, npm);
  mkdirSync(path.dirname(to), { recursive: true });
  copyFileSync(from, to);
}

const geoip = geoipDependency();
const manifest = {
  name: 'proxyd',
  version: app.version,
  description:
    'A reverse proxy for self-hosted web apps: routes by host name, automatic HTTPS, first-party analytics, a JSON admin API.',
  license: app.license,
  type: 'module',
  bin: { proxyd: 'dist/main.js' },
  files: ['dist', 'vendor', 'build-info.json', 'THIRD-PARTY-NOTICES.md'],
  engines: { node: '>=24' },
  keywords: ['reverse-proxy', 'https', 'acme', 'analytics', 'proxy'],
  dependencies: { [geoip.name]: geoip.version },
  bundleDependencies: [geoip.name],
};
writeFileSync(path.join(out, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
copyFileSync(path.join(repoRoot, 'LICENSE'), path.join(out, 'LICENSE'));
copyFileSync(path.join(repoRoot, 'packaging/npm-README.md'), path.join(out, 'README.md'));
writeFileSync(path.join(out, 'THIRD-PARTY-NOTICES.md'), thirdPartyNotices(metafile));

const packed = execFileSync('npm', ['pack', '--json', '--loglevel=error', '--pack-destination', releaseDir], {
  cwd: out,
  encoding: 'utf8',
  stdio: ['ignore', 'pipe', 'inherit'],
});
const [{ filename, size, unpackedSize, entryCount }] = JSON.parse(packed);
const mb = (n) => `${(n / 1e6).toFixed(1)} MB`;
process.stdout.write(
  `${path.relative(process.cwd(), path.join(releaseDir, filename))}: ${mb(size)} (${mb(unpackedSize)} unpacked, ${entryCount} files) in ${((performance.now() - started) / 1000).toFixed(1)} s\n`,
);
