// A stand-in for the agent service, run as its main process inside the sandbox: it takes JSON
// commands on a Unix socket and runs them from inside the service's cgroup, either in-process
// (so the peer is the real MainPID) or as child processes (so they share its cgroup).
// Command (one JSON line per connection): {"peers": {count, mode, hold}} | {"run": [argv...], "background": bool}
// | {"release": true} (closes held connections, ends background children)
// Answer: one JSON line.
import { spawn } from 'node:child_process';
import { renameSync, rmSync } from 'node:fs';
import net from 'node:net';
import { runPeers } from './peer.mjs';

const [listenPath, supervisorSocket] = process.argv.slice(2);
const held = [];
const children = new Set();

function run(argv, background) {
  const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  // A failed spawn is an answer, never an uncaught 'error' that ends the agent (the test would then
  // see ECONNREFUSED on the agent's socket and nothing of why).
  const failed = new Promise((resolve) => child.on('error', (error) => resolve({ code: null, error: error.message, stdout: '', stderr: '' })));
  if (background) {
    children.add(child);
    child.on('exit', () => children.delete(child));
    return Promise.resolve({ pid: child.pid });
  }
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return Promise.race([failed, new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })))]);
}

rmSync(listenPath, { force: true });
rmSync(`${listenPath}.new`, { force: true });
net
  .createServer({ allowHalfOpen: true }, (connection) => {
    let text = '';
    connection.on('error', (error) => console.error(`agent: control connection: ${error.message}`));
    connection.on('data', async (chunk) => {
      text += chunk;
      if (!text.includes('\n')) return;
      let answer;
      try {
        const command = JSON.parse(text);
        if (command.peers) {
          const { count, mode, hold } = command.peers;
          answer = { reports: await runPeers(supervisorSocket, count, mode, hold, held) };
        } else if (command.release) {
          for (const socket of held.splice(0)) socket.destroy();
          for (const child of children) child.kill('SIGTERM');
          answer = { released: true };
        } else {
          answer = await run(command.run, command.background);
        }
      } catch (error) {
        answer = { agentError: error.stack ?? String(error) };
      }
      connection.end(`${JSON.stringify(answer)}\n`);
    });
  })
  // Listening before the name appears: the test connects as soon as it sees the file.
  .listen(`${listenPath}.new`, () => renameSync(`${listenPath}.new`, listenPath));
