// A test peer run inside the sandbox (plain Node, no dependencies): opens connections to the
// supervisor socket and reports, per connection, the first frame the broker answered with.
// As a command: node peer.mjs SOCKET COUNT MODE [hold]; each report is one JSON line on stdout.
//   MODE: silent (send nothing) | hello (send HELLO) | drip (one HELLO byte a second) | junk (a frame of unknown type)
//         | hello-idle (send HELLO, then nothing; reported when the server closes, with every frame)
//   hold: keep every connection open (reported as "connected") until the process is killed.
// Or: node peer.mjs SOCKET flood SECONDS [PARALLEL]: connects and closes as fast as it can for that
// long, PARALLEL loops at once; one JSON line counting the outcomes (first frame, or connect error).
import net from 'node:net';
import { pathToFileURL } from 'node:url';

export const HELLO = Buffer.from('01000000084f43505400010001', 'hex');
const JUNK = Buffer.from('7f00000000', 'hex');

function frames(buffer) {
  const found = [];
  while (buffer.length >= 5 && buffer.length >= 5 + buffer.readUInt32BE(1)) {
    found.push(describe(buffer).frame);
    buffer = buffer.subarray(5 + buffer.readUInt32BE(1));
  }
  return found;
}

function describe(buffer) {
  if (buffer.length < 5) return { frame: 'none' };
  const type = buffer[0];
  const payload = buffer.subarray(5, 5 + buffer.readUInt32BE(1));
  if (type === 0x02) return { frame: 'welcome', version: payload.readUInt16BE(0) };
  if (type === 0x0c) return { frame: 'error', code: payload.readUInt16BE(0), message: payload.subarray(2).toString() };
  return { frame: `type-${type}` };
}

/** Opens one connection; resolves with its report. `hold` resolves once connected and keeps it open. */
export function connectOne(socketPath, mode, hold, sockets = []) {
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = net.createConnection(socketPath);
    sockets.push(socket);
    let received = Buffer.alloc(0);
    let reported = false;
    const report = (extra) => {
      if (reported) return;
      reported = true;
      resolve({ ms: Date.now() - started, ...describe(received), ...extra });
    };
    socket.on('connect', () => {
      if (mode === 'hello' || mode === 'hello-idle') socket.write(HELLO);
      if (mode === 'junk') socket.write(JUNK);
      if (mode === 'drip') {
        let sent = 0;
        const timer = setInterval(() => {
          if (sent >= HELLO.length - 1 || socket.destroyed) return clearInterval(timer);
          socket.write(HELLO.subarray(sent, sent + 1));
          sent += 1;
        }, 1000);
        socket.on('close', () => clearInterval(timer));
      }
      if (hold) report({ frame: 'connected' });
    });
    socket.on('data', (chunk) => {
      received = Buffer.concat([received, chunk]);
      if (mode === 'hello-idle') return;
      if (received.length >= 5 && received.length >= 5 + received.readUInt32BE(1)) report({});
    });
    // 'close' follows 'error': report then, with whatever arrived before the error.
    let failure;
    socket.on('error', (error) => (failure = error.code));
    socket.on('close', () => {
      // hello-idle: the last frame is the one that ended the connection.
      const all = frames(received);
      const last = mode === 'hello-idle' && all.length > 1 ? describe(received.subarray(5 + received.readUInt32BE(1))) : {};
      report({ closed: true, frames: all, ...last, ...(failure ? { error: failure } : {}) });
    });
  });
}

/** Opens `count` connections one after another, each reported before the next opens. */
export async function runPeers(socketPath, count, mode, hold, sockets = []) {
  const reports = [];
  for (let i = 0; i < count; i += 1) reports.push(await connectOne(socketPath, mode, hold, sockets));
  if (!hold) for (const socket of sockets) socket.destroy();
  return reports;
}

/** Connects and closes for `seconds`, `parallel` loops at once; counts outcomes by first frame or error. */
export async function flood(socketPath, seconds, parallel = 4) {
  const counts = {};
  const until = Date.now() + seconds * 1000;
  const loop = async () => {
    while (Date.now() < until) {
      const report = await connectOne(socketPath, 'silent', false);
      const key = report.error && report.frame === 'none' ? report.error : report.code !== undefined ? `error-${report.code}` : report.frame;
      counts[key] = (counts[key] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: parallel }, loop));
  return counts;
}

// Run as a command only under its own name: the agent stand-in's bundle (support/agent-main.ts) holds this module too.
const isMain = Boolean(process.argv[1]?.endsWith('/peer.mjs')) && import.meta.url === pathToFileURL(process.argv[1]).href;
if (isMain && process.argv[3] === 'flood') {
  const [socketPath, , seconds, parallel] = process.argv.slice(2);
  process.stdout.write(`${JSON.stringify(await flood(socketPath, Number(seconds), Number(parallel ?? 4)))}\n`);
} else if (isMain) {
  const [socketPath, count, mode, hold] = process.argv.slice(2);
  const reports = await runPeers(socketPath, Number(count), mode, hold === 'hold');
  for (const report of reports) process.stdout.write(`${JSON.stringify(report)}\n`);
  // Held connections stay open until this process is killed.
  if (hold === 'hold') setInterval(() => undefined, 1 << 30);
}
