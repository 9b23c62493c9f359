#!/usr/bin/env node
// `pnpm build:sea`: proxyd as one executable file (Node's single executable
// application), from the built daemon (run `pnpm build` first; the root
// script does). Linux only for now.
//
//   dist/proxyd                   the executable: this Node binary with the daemon injected
//   dist/sea/                     what it is made from (the bundled script, the SEA config and blob)
//
// Node 24 runs a CommonJS main script from the blob, so the daemon is bundled
// to CommonJS from `scripts/sea-entry.cjs`, which serves the files the daemon
// reads at run time from the SEA assets and runs a forked worker (see there).
// Every module's `import.meta.url` becomes a file URL under the executable's
// path that mirrors the repository, which is how the entry finds what a
// module asks for.
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { appDir, appPackage, bundle, RUNTIME_FILES, releaseDir, repoRoot, thirdPartyNotices } from './bundle.mjs';

/** Runs a step; its output is shown only when it fails. */
function quiet(file, args) {
  try {
    execFileSync(file, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    process.stderr.write(`${err.stdout ?? ''}${err.stderr ?? ''}`);
    throw err;
  }
}

if (process.platform !== 'linux') {
  process.stderr.write('build-sea: the single executable is built and tested on Linux only\n');
  process.exit(1);
}
const started = performance.now();
const work = path.join(releaseDir, 'sea');
const output = path.join(releaseDir, 'proxyd');
rmSync(work, { recursive: true, force: true });
mkdirSync(work, { recursive: true });

/** @type {import('esbuild').Plugin} */
const moduleUrls = {
  name: 'proxyd-module-urls',
  setup(build) {
    // The workspace's built modules (third-party ones use no import.meta; if one
    // starts to, esbuild's warning fails the build).
    build.onLoad({ filter: /\/(apps|packages)\/[^/]+\/dist\/.*\.js$/ }, (args) => {
      const contents = readFileSync(args.path, 'utf8');
      if (!contents.includes('import.meta')) return undefined;
      const key = path.relative(repoRoot, args.path).split(path.sep).join('/');
      const replaced = contents.replaceAll('import.meta.url', `__proxydModuleUrl(${JSON.stringify(key)})`);
      if (/import\.meta(?!\.url)/.test(replaced.replace(/\/\/.*$|\/\*[\s\S]*?\*\//gm, ''))) {
        throw new Error(`${key}: only import.meta.url is supported in the single executable`);
      }
      return { contents: replaced, loader: 'js', resolveDir: path.dirname(args.path) };
    });
  },
};

const script = path.join(work, 'proxyd.cjs');
const { metafile } = await bundle({
  entryPoints: ['scripts/sea-entry.cjs'],
  outfile: script,
  format: 'cjs',
  plugins: [moduleUrls],
  banner: {
    js: "const __proxydModuleUrl = (key) => require('node:url').pathToFileURL(require('node:path').join(process.execPath, key)).href;",
  },
});

const app = appPackage();
const version = path.join(work, 'package.json');
writeFileSync(version, `${JSON.stringify({ name: 'proxyd', version: app.version, license: app.license })}\n`);
writeFileSync(path.join(releaseDir, 'THIRD-PARTY-NOTICES.md'), thirdPartyNotices(metafile));
const config = {
  main: script,
  output: path.join(work, 'proxyd.blob'),
  disableExperimentalSEAWarning: true,
  // V8's code cache for the main script, made now: the executable starts without compiling it.
  useCodeCache: true,
  assets: {
    // `apps/proxyd/src/main.ts` reads the version from `../package.json`.
    'apps/proxyd/package.json': version,
    ...Object.fromEntries(RUNTIME_FILES.map(({ key, from }) => [key, from])),
  },
};
const configFile = path.join(work, 'sea-config.json');
writeFileSync(configFile, `${JSON.stringify(config, null, 2)}\n`);
quiet(process.execPath, ['--experimental-sea-config', configFile]);

rmSync(output, { force: true });
copyFileSync(process.execPath, output);
chmodSync(output, 0o755);
const postject = createRequire(path.join(appDir, 'package.json')).resolve('postject/dist/cli.js');
// postject prints a warning per ELF note section it cannot name; only a failure matters.
quiet(process.execPath, [
  postject,
  output,
  'NODE_SEA_BLOB',
  config.output,
  '--sentinel-fuse',
  // The fuse Node's binary carries (documented with single executable applications).
  'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2',
]);
const mb = (n) => `${(n / 1e6).toFixed(1)} MB`;
process.stdout.write(
  `${path.relative(process.cwd(), output)}: ${mb(statSync(output).size)} (Node ${process.version}, script ${mb(statSync(script).size)}) in ${((performance.now() - started) / 1000).toFixed(1)} s\n`,
);
