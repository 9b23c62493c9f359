// A worker for worker-pool.test.ts: records what it is sent, answers with it.
// Its behaviour comes from the init body: `slowInitMs`, `failInit`.
import { connectToPrimary } from '../dist/index.js';

const seen = [];
let drained = false;
connectToPrimary({
  async init(body, channel) {
    if (body.slowInitMs) await new Promise((r) => setTimeout(r, body.slowInitMs));
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
