// Slow admin clients, in a process of their own so that the server's RSS is
// the server's: opens `count` connections to the admin listener (spread over
// the loopback `addresses`), plays one scenario on each, and reports to the
// parent (IPC) how long the server took to cut each one. Driven by
// `src/slow-clients.stress.test.ts`; the figures are in the README.
//
// Scenarios (every trickle sends one piece per `intervalMs`, below the idle timeout):
//   silent          connects and sends nothing
//   header-trickle  a request line, then one header line at a time, never the blank line (slowloris)
//   body-stalled    an authenticated POST's headers (Content-Length: 100), then nothing
//   body-trickle    an authenticated POST (Content-Length: 65536), then one body byte at a time
//   unauth-trickle  a POST without a token (Content-Length: 65536), then one body byte at a time
import net from 'node:net';

const { scenario, port, count, addresses, windowMs, intervalMs, token } = JSON.parse(process.argv[2] ?? '{}');

const heads = {
  silent: '',
  'header-trickle': 'GET /routes HTTP/1.1\r\nHost: admin\r\n',
  'body-stalled': `POST /routes HTTP/1.1\r\nHost: admin\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n`,
  'body-trickle': `POST /routes HTTP/1.1\r\nHost: admin\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 65536\r\n\r\n`,
  'unauth-trickle':
    'POST /routes HTTP/1.1\r\nHost: admin\r\nContent-Type: application/json\r\nContent-Length: 65536\r\n\r\n',
};
const trickle = {
  silent: null,
  'header-trickle': (i) => `X-Pad-${i}: x\r\n`,
  'body-stalled': null,
  'body-trickle': () => ' ',
  'unauth-trickle': () => ' ',
};
if (!(scenario in heads)) throw new Error(`unknown scenario ${scenario}`);

const started = performance.now();
const clients = [];
let done = 0;
let settled = 0;
/** Tells the parent once every connection is open (or failed), so it can measure what they hold. */
function settle() {
  if (++settled === count) process.send?.({ type: 'connected', connected: clients.filter((c) => c.connected).length });
}

function connectOne(i) {
  const c = { connected: false, cutAfterMs: null, status: null, error: null, pieces: 0 };
  clients.push(c);
  const socket = net.connect({ port, host: '127.0.0.1', localAddress: addresses[i % addresses.length] });
  let at = 0;
  let timer = null;
  socket.setNoDelay(true);
  socket.on('connect', () => {
    c.connected = true;
    at = performance.now();
    settle();
    if (heads[scenario] !== '') socket.write(heads[scenario]);
    const piece = trickle[scenario];
    if (piece !== null) {
      timer = setInterval(() => {
        if (socket.writable) socket.write(piece(c.pieces++));
      }, intervalMs);
    }
  });
  socket.on('data', (chunk) => {
    if (c.status === null) c.status = Number(/^HTTP\/1\.1 (\d{3})/.exec(chunk.toString('latin1'))?.[1] ?? 0);
  });
  socket.on('error', (err) => {
    c.error = err.code ?? err.message;
  });
  socket.on('close', () => {
    if (!c.connected) settle();
    if (timer !== null) clearInterval(timer);
    if (c.connected) c.cutAfterMs = performance.now() - at;
    if (++done === count) report();
  });
  c.socket = socket;
}

let reported = false;
function report() {
  if (reported) return;
  reported = true;
  clearTimeout(deadline);
  const cut = clients
    .map((c) => c.cutAfterMs)
    .filter((t) => t !== null)
    .sort((a, b) => a - b);
  const at = (q) => (cut.length === 0 ? null : Math.round(cut[Math.min(cut.length - 1, Math.floor(q * cut.length))]));
  const statuses = {};
  for (const c of clients) {
    const key = c.status === null ? 'none' : String(c.status);
    statuses[key] = (statuses[key] ?? 0) + 1;
  }
  const stillOpen = clients.filter((c) => c.connected && c.cutAfterMs === null).length;
  process.send?.({
    type: 'report',
    scenario,
    count,
    connected: clients.filter((c) => c.connected).length,
    cut: cut.length,
    stillOpen,
    cutMs: { min: at(0), median: at(0.5), p99: at(0.99), max: at(1) },
    statuses,
    errors: clients.filter((c) => c.error !== null).length,
    elapsedMs: Math.round(performance.now() - started),
  });
  for (const c of clients) c.socket.destroy();
  setTimeout(() => process.exit(0), 100);
}

// Held past the window: report what is still open, then close it ourselves.
const deadline = setTimeout(report, windowMs);
for (let i = 0; i < count; i++) connectOne(i);
process.on('message', (m) => {
  if (m === 'report') report();
});
