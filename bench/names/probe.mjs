// bench/names' probe, in its own process: a sequential keep-alive HTTPS
// loop to one name, the chain verified against the CA in PROBE_CA. The
// bench's own work (writes, /proc sampling, JSON) must not be in the
// probe's latencies: before, the probe shared the bench's event loop, and a
// busy bench read as a stall of the data plane.
//
// The probe says {type: 'ready'} once warm (its first 200 requests, or 2 s:
// the first ones pay the handshake and the JIT). Messages from the parent:
// {type: 'window'} starts a window (the samples
// so far are dropped), {type: 'collect'} answers {type: 'samples', samples,
// starts, failures, lastError} for the window so far, {type: 'stop'} ends
// the loop and the process. `starts` are on the machine's monotonic clock
// (process.hrtime, ms), which every process shares.
import https from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';

const [port, name] = process.argv.slice(2);
const ca = process.env.PROBE_CA;
const gapMs = Number(process.env.PROBE_GAP_MS ?? 0);
const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
const monotonicMs = () => Number(process.hrtime.bigint()) / 1e6;

let running = true;
let samples = [];
let starts = [];
let failures = 0;
let lastError = null;

function get() {
  return new Promise((resolve, reject) => {
    const req = https.get(
      { host: '127.0.0.1', port: Number(port), servername: name, ca, agent, path: '/', headers: { host: name } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode));
        res.on('error', reject);
      },
    );
    req.setTimeout(30_000, () => req.destroy(new Error('GET /: no answer within 30000 ms')));
    req.on('error', reject);
  });
}

process.on('message', (message) => {
  if (message.type === 'window') {
    samples = [];
    starts = [];
    failures = 0;
    lastError = null;
  } else if (message.type === 'collect') {
    process.send({ type: 'samples', samples, starts, failures, lastError });
  } else if (message.type === 'stop') {
    running = false;
  }
});

const bornAt = monotonicMs();
let ready = false;
while (running) {
  if (!ready && (samples.length >= 200 || monotonicMs() - bornAt > 2000)) {
    ready = true;
    process.send({ type: 'ready' });
  }
  const started = monotonicMs();
  try {
    const status = await get();
    if (status !== 200) {
      failures++;
      lastError = `status ${status}`;
    }
  } catch (err) {
    failures++;
    lastError = err.message;
    await sleep(10);
  }
  samples.push(monotonicMs() - started);
  starts.push(started);
  if (gapMs > 0) await sleep(gapMs);
}
agent.destroy();
process.disconnect();
