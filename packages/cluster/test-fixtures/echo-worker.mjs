// A worker for worker-pool.test.ts: records what it is sent, answers with it.
// Its behaviour comes from the init body: `slowInitMs`, `failInit`, `busyInitCpuMs` (computes that long first),
// `hangInit` (never answers: `'idle'` waits on nothing, `'spin'` computes forever).
import { connectToPrimary } from '../dist/index.js';

const seen = [];
let drained = false;
connectToPrimary({
  async init(body, channel) {
    if (body.slowInitMs) await new Promise((r) => setTimeout(r, body.slowInitMs));
    if (body.busyInitCpuMs) {
      const { user, system } = process.cpuUsage();
      while ((process.cpuUsage().user - user + process.cpuUsage().system - system) / 1000 < body.busyInitCpuMs);
    }
    if (body.hangInit === 'idle') await new Promise(() => {});
    if (body.hangInit === 'spin') for (;;);
    if (body.failInit) throw new Error('cannot bind :1 (EACCES)');
    seen.push(`init:${body.state}`);
    channel.handle('note', (b) => {
      seen.push(`note:${b}`);
      return true;
    });
    channel.handle('seen', () => ({ pid: process.pid, seen }));
    channel.handle('boom', () => {
      throw new Error('kaput');
    });
    channel.handle('slow', () => new Promise(() => {}));
    channel.handle('ask-primary', async () => await channel.request('whoami', process.pid));
    return { pid: process.pid };
  },
  async drain() {
    drained = true;
    await new Promise((r) => setTimeout(r, 50));
    process.stdout.write(`drained ${process.pid} ${drained}\n`);
  },
});
