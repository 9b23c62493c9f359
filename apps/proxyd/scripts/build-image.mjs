#!/usr/bin/env node
// `pnpm build:image`: proxyd's container image, from the single executable
// (`dist/proxyd`; the root script builds it first) and packaging/Containerfile,
// with Buildah and no registry: the image is `FROM scratch`.
//
//   dist/image/context/                 the build context the Containerfile copies (see there)
//   dist/proxyd-image-<version>.tar     the image `localhost/proxyd:<version>` as an archive
//                                       for `podman load` / `docker load`
//
// The archive is Docker's image archive (`docker save`'s format): its image
// config keeps the HEALTHCHECK, which the OCI image config has no field for
// (Buildah drops it from an OCI image, with a warning). `--oci` writes an OCI
// archive instead (`dist/proxyd-image-<version>.oci.tar`), without the
// healthcheck. Buildah runs on a store of its own in a temporary directory,
// removed at the end: nothing is left in the machine's image store.
import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { appPackage, releaseDir, repoRoot } from './bundle.mjs';

/** The image's user and group (no name clash with a host's users; as distroless' nonroot is 65532). */
const UID = 10001;

const oci = process.argv.includes('--oci');
const executable = path.join(releaseDir, 'proxyd');
const version = appPackage().version;
const tag = `localhost/proxyd:${version}`;
const archive = path.join(releaseDir, `proxyd-image-${version}${oci ? '.oci' : ''}.tar`);
const started = performance.now();

/** Stops with `message` on stderr (exit 1). */
function fail(message) {
  process.stderr.write(`build-image: ${message}\n`);
  process.exit(1);
}

if (process.platform !== 'linux') fail('the image is built on Linux only');
try {
  statSync(executable);
} catch {
  fail(`${path.relative(process.cwd(), executable)} is missing: run \`./dev build:image\` (it builds it first)`);
}
if (spawnSync('buildah', ['--version'], { stdio: 'ignore' }).error) {
  fail('buildah is not installed (Debian: apt-get install buildah)');
}

/**
 * The shared libraries `ldd` names for `file`, and its program interpreter:
 * absolute paths, as the dynamic loader looks them up.
 */
function sharedLibraries(file) {
  const out = execFileSync('ldd', [file], { encoding: 'utf8' });
  const paths = [];
  for (const line of out.split('\n')) {
    const found = line.match(/=>\s*(\/\S+)/) ?? line.match(/^\s*(\/\S+)\s+\(0x/);
    if (found?.[1]) paths.push(found[1]);
  }
  if (!paths.some((p) => p.includes('libc.so'))) fail(`ldd named no libc for ${file}:\n${out}`);
  return paths;
}

/** Writes `text` to `rootfs`-relative `file` with `mode`, making its directory. */
function put(root, file, text, mode = 0o644) {
  const to = path.join(root, file);
  mkdirSync(path.dirname(to), { recursive: true });
  writeFileSync(to, text);
  chmodSync(to, mode);
}

/** Copies `from` (following links) to the same absolute path under `root`. */
function copyAt(root, from, to = from, mode = undefined) {
  const dest = path.join(root, to);
  mkdirSync(path.dirname(dest), { recursive: true });
  copyFileSync(from, dest);
  if (mode !== undefined) chmodSync(dest, mode);
}

const context = path.join(releaseDir, 'image/context');
rmSync(path.join(releaseDir, 'image'), { recursive: true, force: true });
const rootfs = path.join(context, 'rootfs');
const volumes = path.join(context, 'volumes');
mkdirSync(rootfs, { recursive: true });

copyAt(rootfs, executable, '/usr/bin/proxyd', 0o755);
const libraries = sharedLibraries(executable);
for (const lib of libraries) copyAt(rootfs, lib, lib, 0o755);
put(rootfs, 'etc/passwd', `root:x:0:0:root:/:/nonexistent\nproxyd:x:${UID}:${UID}:proxyd:/data:/nonexistent\n`);
put(rootfs, 'etc/group', `root:x:0:\nproxyd:x:${UID}:\n`);
// glibc's default without this file asks DNS before /etc/hosts.
put(rootfs, 'etc/nsswitch.conf', 'passwd: files\ngroup: files\nhosts: files dns\n');
copyAt(rootfs, path.join(repoRoot, 'packaging/Proxyfile.container'), '/etc/proxyd/Proxyfile');
copyAt(rootfs, path.join(repoRoot, 'LICENSE'), '/usr/share/doc/proxyd/LICENSE');
copyAt(rootfs, path.join(releaseDir, 'THIRD-PARTY-NOTICES.md'), '/usr/share/doc/proxyd/THIRD-PARTY-NOTICES.md');
mkdirSync(path.join(rootfs, 'tmp'));
chmodSync(path.join(rootfs, 'tmp'), 0o1777);
for (const dir of ['data', 'certs']) {
  mkdirSync(path.join(volumes, dir), { recursive: true });
  chmodSync(path.join(volumes, dir), 0o700);
}

/** Bytes of the files under `dir`. */
function treeBytes(dir) {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) total += statSync(path.join(entry.parentPath, entry.name)).size;
  }
  return total;
}

const store = mkdtempSync(path.join(tmpdir(), 'proxyd-image-'));
const buildah = (args) =>
  execFileSync(
    'buildah',
    ['--root', path.join(store, 'root'), '--runroot', path.join(store, 'run'), '--storage-driver', 'vfs', ...args],
    { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' },
  );
try {
  const revision = JSON.parse(readFileSync(path.join(repoRoot, 'packages/cli/dist/build-info.json'), 'utf8')).commit;
  buildah([
    'bud',
    '--format',
    oci ? 'oci' : 'docker',
    '--build-arg',
    `VERSION=${version}`,
    '--build-arg',
    `REVISION=${revision}`,
    '-f',
    path.join(repoRoot, 'packaging/Containerfile'),
    '-t',
    tag,
    context,
  ]);
  rmSync(archive, { force: true });
  buildah(['push', '--quiet', tag, `${oci ? 'oci-archive' : 'docker-archive'}:${archive}:${tag}`]);
} catch (err) {
  fail(`buildah failed: ${err.stderr ?? err.message}`);
} finally {
  rmSync(store, { recursive: true, force: true });
}

const mb = (n) => `${(n / 1e6).toFixed(1)} MB`;
process.stdout.write(
  `${path.relative(process.cwd(), archive)}: ${tag}, ${mb(statSync(archive).size)} ` +
    `(root filesystem ${mb(treeBytes(context))}: proxyd ${mb(statSync(executable).size)}, ` +
    `${libraries.length} libraries) in ${((performance.now() - started) / 1000).toFixed(1)} s\n`,
);
