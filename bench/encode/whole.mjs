// node:zlib alone: a body compressed in one synchronous call against a
// stream per body (16 KiB writes, as the encode step gets them), gzip 5,
// gzip 1 (nginx's default) and zstd 3, on the bench page cut to each size.
// CPU µs per body (process.cpuUsage over N bodies) and bytes.
//
//   nice -n 19 taskset -c 1 node bench/encode/whole.mjs      (N=300)
import zlib from 'node:zlib';
import { buildPage } from './page.mjs';

const page = Buffer.from(buildPage());
const N = Number(process.env.N ?? 300);
const zstd = (length) => ({ params: { [zlib.constants.ZSTD_c_compressionLevel]: 3 }, pledgedSrcSize: length });

function oneCall(fn) {
  const before = process.cpuUsage();
  for (let i = 0; i < N; i++) fn();
  const used = process.cpuUsage(before);
  return Math.round((used.user + used.system) / N);
}

async function streamed(make, body) {
  const before = process.cpuUsage();
  for (let i = 0; i < N; i++) {
    await new Promise((resolve) => {
      const s = make();
      s.on('data', () => {});
      s.on('end', resolve);
      for (let o = 0; o < body.length; o += 16384) s.write(body.subarray(o, o + 16384));
      s.end();
    });
  }
  const used = process.cpuUsage(before);
  return Math.round((used.user + used.system) / N);
}

console.log('body    gzip5-call gzip5-stream gzip1-call zstd3-call zstd3-stream | bytes gzip5 gzip1 zstd3');
for (const kb of [1, 10, 32, 64, 100]) {
  const body = page.subarray(0, Math.min(page.length, kb * 1024));
  const g5 = oneCall(() => zlib.gzipSync(body, { level: 5 }));
  const g5s = await streamed(() => zlib.createGzip({ level: 5 }), body);
  const g1 = oneCall(() => zlib.gzipSync(body, { level: 1 }));
  const z3 = oneCall(() => zlib.zstdCompressSync(body, zstd(body.length)));
  const z3s = await streamed(() => zlib.createZstdCompress(zstd(body.length)), body);
  const bytes = [
    zlib.gzipSync(body, { level: 5 }).length,
    zlib.gzipSync(body, { level: 1 }).length,
    zlib.zstdCompressSync(body, zstd(body.length)).length,
  ];
  console.log(
    `${`${kb} KB`.padEnd(7)} ${[g5, g5s, g1, z3, z3s].map((x) => String(x).padStart(11)).join('')} | ${bytes.join(' ')}`,
  );
}
