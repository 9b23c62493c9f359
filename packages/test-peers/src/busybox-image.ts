import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { EngineApi } from './engine-api.js';

/** The tag of the local test image in every runtime's store. */
export const BUSYBOX_IMAGE = 'localhost/busybox-httpd:test';

const BUSYBOX = '/bin/busybox';

/** True when the ELF file at `file` has no program interpreter (a static binary runs in an empty rootfs). */
function isStaticElf(file: string): boolean {
  const fd = openSync(file, 'r');
  try {
    const header = Buffer.alloc(64);
    readSync(fd, header, 0, 64, 0);
    if (header.readUInt32BE(0) !== 0x7f454c46 || header[4] !== 2) return false; // ELF64 only
    const phoff = Number(header.readBigUInt64LE(32));
    const phentsize = header.readUInt16LE(54);
    const phnum = header.readUInt16LE(56);
    const table = Buffer.alloc(phentsize * phnum);
    readSync(fd, table, 0, table.length, phoff);
    for (let i = 0; i < phnum; i++) if (table.readUInt32LE(i * phentsize) === 3) return false; // PT_INTERP
    return true;
  } finally {
    closeSync(fd);
  }
}

/**
 * A tar of a busybox rootfs: the static `/bin/busybox` (Debian's
 * busybox-static), a link per applet in `/bin`, and `/www`. Built in `dir`.
 */
export function busyboxRootfsTar(dir: string): Buffer {
  if (!isStaticElf(BUSYBOX)) {
    throw new Error(`${BUSYBOX} is not a static binary: install busybox-static (scripts/ensure-test-deps.sh)`);
  }
  const bin = path.join(dir, 'bin');
  for (const sub of ['bin', 'www', 'tmp', 'etc', 'proc', 'sys', 'dev'])
    mkdirSync(path.join(dir, sub), { recursive: true });
  execFileSync('cp', [BUSYBOX, path.join(bin, 'busybox')]);
  const applets = execFileSync(BUSYBOX, ['--list'], { encoding: 'utf8' }).split('\n');
  for (const applet of applets)
    if (applet !== '' && applet !== 'busybox') symlinkSync('busybox', path.join(bin, applet));
  writeFileSync(path.join(dir, 'etc', 'passwd'), 'root:x:0:0:root:/:/bin/sh\n');
  writeFileSync(path.join(dir, 'etc', 'group'), 'root:x:0:\n');
  writeFileSync(path.join(dir, 'www', 'index.html'), 'busybox\n');
  return execFileSync('tar', ['-C', dir, '-c', '.'], { maxBuffer: 64 * 1024 * 1024 });
}

/**
 * Imports the busybox rootfs as {@link BUSYBOX_IMAGE} through the Engine API
 * (`POST /images/create?fromSrc=-`: no registry), unless the store has it.
 */
export async function importBusyboxImage(api: EngineApi, dir: string): Promise<void> {
  try {
    await api.request('GET', `/images/${BUSYBOX_IMAGE}/json`);
    return;
  } catch {}
  const changes = ['ENV PATH=/bin', 'CMD ["/bin/busybox","httpd","-f","-p","8080","-h","/www"]'];
  const query = [
    'fromSrc=-',
    'repo=localhost/busybox-httpd',
    ...changes.map((c) => `changes=${encodeURIComponent(c)}`),
  ];
  const { body } = await api.request('POST', `/images/create?${query.join('&')}`, busyboxRootfsTar(dir), {
    contentType: 'application/x-tar',
  });
  // Podman ignores `tag` on import (it tags `latest`), so tag by id afterwards; both answer the id as a status line.
  const id = String(body).match(/sha256:[0-9a-f]{64}/)?.[0] ?? JSON.stringify(body).match(/sha256:[0-9a-f]{64}/)?.[0];
  if (id === undefined) throw new Error(`image import answered no id: ${JSON.stringify(body)}`);
  await api.request('POST', `/images/${id}/tag?repo=localhost/busybox-httpd&tag=test`);
}
