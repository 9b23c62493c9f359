// The like-for-like counterpart of `caddy adapt` for bench/proxyfile/run.mjs:
// reads a Proxyfile, parses and compiles it (schema check included), and
// writes the model as JSON to stdout, as `caddy adapt` writes its config.
//   node bench/proxyfile/adapt.mjs <Proxyfile>
import { readFileSync, writeSync } from 'node:fs';
import { parse } from '@proxyd/proxyfile';

const file = process.argv[2];
if (file === undefined) {
  console.error('usage: node bench/proxyfile/adapt.mjs <Proxyfile>');
  process.exit(2);
}
const config = parse(readFileSync(file, 'utf8'), { filename: file });
const out = Buffer.from(`${JSON.stringify(config)}\n`);
for (let off = 0; off < out.length; ) off += writeSync(1, out, off);
