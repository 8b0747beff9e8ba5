// Command line for the test sandbox: `shell` (interactive root shell inside) or `boot` (boot, print, wait).
// Usage: node --import tsx test/sandbox/cli.ts shell|boot [--name NAME] [--as client|other]
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { parseArgs } from 'node:util';
import { execArgv } from './exec.ts';
import { bootSandbox, sandboxUnavailable, SandboxError, type Sandbox } from './index.ts';

const USAGE = 'usage: node --import tsx test/sandbox/cli.ts shell|boot [--name NAME] [--as root|client|other]';

function fail(message: string, code = 2): never {
  process.stderr.write(`sandbox: ${message}\n`);
  process.exit(code);
}

/** An interactive shell needs our terminal as its stdio, so it is spawned here with inherited stdio. */
async function shell(sandbox: Sandbox, as: 'root' | 'client' | 'other'): Promise<number> {
  process.stderr.write(`sandbox ${sandbox.name} is up (host PID of its systemd: ${sandbox.pid1}); exit the shell to stop it.\n`);
  const argv = execArgv(sandbox.pid1, ['/bin/bash', '-l'], { as, env: { TERM: process.env.TERM ?? 'xterm' } }, sandbox);
  // ^C at the prompt belongs to the shell, not to us.
  process.on('SIGINT', () => {});
  const child = spawn(argv[0]!, argv.slice(1), { stdio: 'inherit' });
  const [code, signal] = (await once(child, 'exit')) as [number | null, string | null];
  return code ?? (signal ? 1 : 0);
}

async function boot(sandbox: Sandbox): Promise<number> {
  process.stdout.write(
    [
      `sandbox ${sandbox.name} booted in ${sandbox.bootMs.toFixed(0)} ms`,
      `  PID 1 (host):  ${sandbox.pid1}`,
      `  root:          ${sandbox.root}`,
      `  bus:           ${sandbox.busAddress}`,
      `  run dir:       ${sandbox.runDir}  (/run/opencode-pty inside)`,
      `  boot log:      ${sandbox.bootLogPath}`,
      `  enter:         nsenter --target ${sandbox.pid1} --all --root --wd`,
      'Press Ctrl-C (or close stdin) to stop it.',
      '',
    ].join('\n'),
  );
  await Promise.race([once(process, 'SIGINT'), once(process, 'SIGTERM'), once(process.stdin.resume(), 'end')]);
  process.stdin.pause();
  return 0;
}

async function main(): Promise<void> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: { name: { type: 'string' }, as: { type: 'string', default: 'root' } },
  });
  const command = positionals[0];
  if (positionals.length !== 1 || (command !== 'shell' && command !== 'boot')) fail(USAGE);
  const as = values.as as 'root' | 'client' | 'other';
  if (!['root', 'client', 'other'].includes(as)) fail(USAGE);
  const reason = sandboxUnavailable();
  if (reason) fail(`cannot boot the sandbox: ${reason}`);

  let sandbox: Sandbox;
  try {
    sandbox = await bootSandbox({ name: values.name ?? 'opencode-pty-shell' });
  } catch (error) {
    fail(error instanceof SandboxError ? `${error.code}: ${error.message}` : String(error), 1);
  }
  let status = 0;
  try {
    status = command === 'shell' ? await shell(sandbox, as) : await boot(sandbox);
  } finally {
    try {
      await sandbox.stop();
      process.stderr.write(`sandbox ${sandbox.name} stopped; the host check passed.\n`);
    } catch (error) {
      fail(error instanceof SandboxError ? `${error.code}: ${error.message}` : String(error), 1);
    }
  }
  process.exit(status);
}

await main();
