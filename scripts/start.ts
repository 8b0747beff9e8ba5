// npm start -- [CMD…]: builds if needed, boots a private systemd, installs the supervisor with its
// units, and runs CMD (default: a login shell) as the client account through the real
// socket-activated supervisor, attached to this terminal. Exits with the session's status.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { constants } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bootSandbox, sandboxUnavailable, type Sandbox } from '../test/sandbox/index.ts';
import { agentRun, deploy } from '../test/sandbox/deploy.ts';
import { execArgv } from '../test/sandbox/exec.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
/** How long a stopped session may take to end before its client is killed. */
const STOP_DEADLINE_MS = 10_000;

function say(message: string): void {
  process.stderr.write(`opencode-pty start: ${message}\n`);
}

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/** Rebuilds when a source is newer than the bundles or the addon is missing (build.mjs builds it then, as npm ci does). */
function buildIfNeeded(): void {
  const bundle = join(root, 'dist/broker.cjs');
  const stale = !existsSync(join(root, 'build/Release/opencode_pty.node')) || !existsSync(bundle) || newestMtime(join(root, 'src')) > statSync(bundle).mtimeMs;
  if (!stale) return;
  const built = spawnSync(process.execPath, [join(root, 'build.mjs')], { stdio: ['ignore', 2, 2] });
  if (built.status !== 0) throw new Error('build failed');
}

async function main(): Promise<number> {
  const unavailable = sandboxUnavailable();
  if (unavailable) throw new Error(`${unavailable.replace('integration tests need', 'npm start needs')}; it boots a private systemd to run the supervisor in`);
  buildIfNeeded();
  const command = process.argv.slice(2);
  const sandbox: Sandbox = await bootSandbox({ name: 'opencode-pty-start' });
  let stopping = false;
  try {
    await deploy(sandbox);
    const tty = Boolean(process.stdin.isTTY && process.stdout.isTTY);
    const argv = agentRun(sandbox, command.length ? command : ['/bin/bash', '-l'], { tty });
    const [file, ...args] = execArgv(sandbox.pid1, argv, {}, sandbox);
    const child = spawn(file!, args, { stdio: 'inherit' });
    const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on('exit', (c, s) => resolve([c, s])));
    // The terminal's ^C goes to the session in raw mode; a signal to us ends the session through the
    // CLI, and npm's death reaches us as SIGTERM (setpriv --pdeathsig in package.json). A session
    // that does not end within the deadline is killed: the sandbox always goes.
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
      process.on(signal, () => {
        if (stopping) return;
        stopping = true;
        child.kill(signal);
        const deadline = setTimeout(() => child.kill('SIGKILL'), STOP_DEADLINE_MS);
        void exited.then(() => clearTimeout(deadline));
      });
    }
    const [code, signal] = await exited;
    return code ?? 128 + (signal ? constants.signals[signal] : 0);
  } finally {
    // The host check reports on stderr; it never replaces the session's status.
    await sandbox.stop().catch((error: Error) => say(`after the session: ${error.message}`));
  }
}

main().then(
  (code) => process.exit(code),
  (error: Error) => {
    say(error.message);
    process.exit(1);
  },
);
