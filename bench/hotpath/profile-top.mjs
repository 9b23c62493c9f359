// The top self-time functions of a V8 CPU profile (`node --cpu-prof`).
//
//   node bench/hotpath/profile-top.mjs <file.cpuprofile> [count]
import { readFileSync } from 'node:fs';
import path from 'node:path';

const [file, count = '25'] = process.argv.slice(2);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map();
// Each sample is charged to the leaf node it hit, with the time delta that follows it.
for (let i = 0; i < profile.samples.length; i++) {
  const n = byId.get(profile.samples[i]);
  const f = n.callFrame;
  const key = `${f.functionName || '(anonymous)'} ${f.url ? `${path.basename(f.url)}:${f.lineNumber + 1}` : ''}`.trim();
  self.set(key, (self.get(key) ?? 0) + (profile.timeDeltas[i + 1] ?? 0));
}
const total = [...self.values()].reduce((a, b) => a + b, 0);
const idle = self.get('(idle)') ?? 0;
console.log(
  `${(total / 1e6).toFixed(2)} s sampled, ${(((total - idle) / total) * 100).toFixed(0)} % busy; shares of busy time:`,
);
for (const [k, us] of [...self.entries()]
  .filter(([k]) => k !== '(idle)')
  .sort((a, b) => b[1] - a[1])
  .slice(0, Number(count))) {
  console.log(`${(`${((us / (total - idle)) * 100).toFixed(1)} %`).padStart(7)}  ${k}`);
}
