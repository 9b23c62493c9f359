// node:zlib alone on the bench page: output bytes and CPU per page for each
// level of gzip, brotli and zstd, compressed the way proxyd's encode step
// does it (a zlib stream fed 16 KiB chunks), with no proxy around it. It
// tells what another level would cost at another output size, which the
// end-to-end run cannot (proxyd's levels are fixed: gzip 5, br 4, zstd 3).
//
//   taskset -c 1 node bench/encode/levels.mjs          (run.mjs runs it and reads its JSON)
//   LEVELS_MS=300 node bench/encode/levels.mjs --table
//
// CPU is process.cpuUsage() (user + system of every thread: zlib streams
// compress on the libuv pool) over at least LEVELS_MS (150) ms and 5 pages
// per level, after 2 pages unmeasured. proxyd's own levels are also measured
// with 16 pages compressed at once (as under wrk -c16): `cpuUs16`, `sysUs16`.
import zlib from 'node:zlib';
import { buildPage } from './page.mjs';

const MS = Number(process.env.LEVELS_MS ?? 150);
const CHUNK = 16 * 1024;
const page = buildPage();

const make = {
  gzip: (level) => zlib.createGzip({ level }),
  br: (level) =>
    zlib.createBrotliCompress({
      params: {
        [zlib.constants.BROTLI_PARAM_QUALITY]: level,
        [zlib.constants.BROTLI_PARAM_MODE]: zlib.constants.BROTLI_MODE_TEXT,
      },
    }),
  zstd: (level) => zlib.createZstdCompress({ params: { [zlib.constants.ZSTD_c_compressionLevel]: level } }),
};
/** Levels measured: every on-the-fly level, and the slow top ones once as a reference. */
const LEVELS = {
  gzip: [1, 2, 3, 4, 5, 6, 7, 8, 9],
  br: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11],
  zstd: [1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 19],
};

function compressOnce(coding, level) {
  return new Promise((resolve, reject) => {
    const z = make[coding](level);
    let bytes = 0;
    z.on('data', (d) => {
      bytes += d.length;
    });
    z.on('end', () => resolve(bytes));
    z.on('error', reject);
    for (let off = 0; off < page.length; off += CHUNK) z.write(page.subarray(off, off + CHUNK));
    z.end();
  });
}

const rows = [];
for (const coding of Object.keys(LEVELS)) {
  for (const level of LEVELS[coding]) {
    await compressOnce(coding, level);
    await compressOnce(coding, level);
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    let n = 0;
    let bytes = 0;
    while (n < 5 || performance.now() - t0 < MS) {
      bytes = await compressOnce(coding, level);
      n++;
    }
    const c = process.cpuUsage(c0);
    rows.push({ coding, level, bytes, cpuUs: (c.user + c.system) / n });
  }
}

/** proxyd's levels (ENCODE_LEVELS in proxy-core's encode.ts). */
const PROXYD_LEVELS = { gzip: 5, br: 4, zstd: 3 };
for (const row of rows) {
  if (PROXYD_LEVELS[row.coding] !== row.level) continue;
  const batch = () => Promise.all(Array.from({ length: 16 }, () => compressOnce(row.coding, row.level)));
  await batch();
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  let n = 0;
  while (n < 32 || performance.now() - t0 < 2 * MS) {
    await batch();
    n += 16;
  }
  const c = process.cpuUsage(c0);
  row.cpuUs16 = (c.user + c.system) / n;
  row.sysUs16 = c.system / n;
}

if (process.argv.includes('--table')) {
  console.log(`page ${page.length} bytes; node:zlib streams, ${CHUNK / 1024} KiB chunks`);
  console.log('coding level    bytes   % of page   CPU µs/page   16 at once (of which sys)');
  for (const r of rows) {
    console.log(
      `${r.coding.padEnd(6)} ${String(r.level).padStart(5)} ${String(r.bytes).padStart(8)}   ${((r.bytes / page.length) * 100).toFixed(1).padStart(8)}   ${r.cpuUs.toFixed(0).padStart(11)}${r.cpuUs16 ? `   ${r.cpuUs16.toFixed(0)} (${r.sysUs16.toFixed(0)})` : ''}`,
    );
  }
} else {
  console.log(JSON.stringify({ pageBytes: page.length, rows }));
}
