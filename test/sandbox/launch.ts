// Starts the first stage as PID 1 of fresh namespaces inside a fresh cgroup, tied to this process's life.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { SandboxError } from './errors.ts';
import { childrenOf, namespaceInode, startTime } from './namespaces.ts';
import type { BootLog } from './boot-log.ts';

export const FIRST_STAGE = fileURLToPath(new URL('./first-stage.sh', import.meta.url));

/** What the first stage prints right before it execs systemd, after pivot_root. */
const STARTING = 'sandbox first stage: starting systemd';
const FIRST_STAGE_DEADLINE_MS = 20_000;

export interface LaunchOptions {
  name: string;
  stateDir: string;
  runDir: string;
  cgroup: string;
  log: BootLog;
}

export interface Launched {
  /** The host-side launcher (script, then unshare below it); it exits right after PID 1 does. */
  child: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves once the console's last output was read (the launcher's streams closed). */
  closed: Promise<void>;
  pid1: number;
  /** PID 1's start time: with pid1 and pidNamespace, what every later kill re-checks. */
  pid1Start: string;
  pidNamespace: number;
  mountNamespace: number;
}

function shellQuote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * The argv that runs the first stage; its checks guard the boot (see first-stage.sh). script(1)
 * gives it a pty as stdin/stdout/stderr: the first stage makes that terminal /dev/console, and
 * script copies everything PID 1 writes there to our stdout. Death signals chain the whole tree to
 * this process: if it dies, script dies, then unshare, whose --kill-child takes PID 1 along.
 */
export function launchArgv(options: Omit<LaunchOptions, 'log'>, host: { mnt: number; pid: number }): string[] {
  const inner = [
    'setpriv',
    '--pdeathsig',
    'KILL',
    '--',
    'unshare',
    '--pid',
    '--fork',
    '--kill-child',
    '--mount',
    '--propagation',
    'private',
    '--uts',
    '--ipc',
    '--net',
    '--cgroup',
    '--mount-proc',
    '--',
    '/bin/sh',
    FIRST_STAGE,
    options.name,
    String(host.mnt),
    String(host.pid),
    options.stateDir,
    options.runDir,
  ];
  // Move this shell into the fresh cgroup first: the cgroup namespace unshare creates is rooted at it.
  const command = `echo 0 >${shellQuote(`${options.cgroup}/cgroup.procs`)} && exec ${inner.map(shellQuote).join(' ')}`;
  return ['setpriv', '--pdeathsig', 'KILL', '--', 'script', '--quiet', '--return', '--flush', '--echo', 'never', '--command', command, '/dev/null'];
}

/** The first process below `pid` that lives in another pid namespace than `hostPidNamespace`. */
function findPid1(pid: number, hostPidNamespace: number): number | undefined {
  const queue = [pid];
  while (queue.length) {
    const next = queue.shift()!;
    const inode = namespaceInode(next, 'pid');
    if (inode !== undefined && inode !== hostPidNamespace) return next;
    queue.push(...childrenOf(next));
  }
  return undefined;
}

export async function launch(options: LaunchOptions): Promise<Launched> {
  const host = { mnt: namespaceInode('self', 'mnt')!, pid: namespaceInode('self', 'pid')! };
  const argv = launchArgv(options, host);
  const child = spawn(argv[0]!, argv.slice(1), {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', SHELL: '/bin/sh', TERM: 'dumb' },
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => resolve({ code, signal }));
  });
  const closed = new Promise<void>((resolve) => child.on('close', () => resolve()));
  options.log.follow(child.stderr);

  // The first stage's last line is the event that says PID 1 runs in new namespaces on the private root.
  const verified = new Promise<void>((resolve) => {
    let seen = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      options.log.append(chunk);
      seen += chunk.toString();
      if (seen.includes(STARTING)) resolve();
    });
  });
  // A first stage that stalls (a hung mount, say) must not hang the boot: it is killed through our handle.
  let timer: NodeJS.Timeout | undefined;
  const stalled = new Promise<'stalled'>((resolve) => (timer = setTimeout(() => resolve('stalled'), FIRST_STAGE_DEADLINE_MS)));
  const outcome = await Promise.race([verified.then(() => 'verified' as const), exited, stalled]);
  clearTimeout(timer);
  if (outcome === 'stalled') {
    child.kill('SIGKILL');
    throw new SandboxError('SANDBOX_BOOT_TIMEOUT', `the sandbox's first stage did not start systemd within ${FIRST_STAGE_DEADLINE_MS} ms:\n${options.log.text}`);
  }
  if (outcome !== 'verified') {
    throw new SandboxError(
      'SANDBOX_BOOT_FAILED',
      `the sandbox's first stage exited (${outcome.signal ?? outcome.code}) before PID 1 ran:\n${options.log.text}`,
    );
  }
  const pid1 = findPid1(child.pid!, host.pid);
  const pidNamespace = pid1 === undefined ? undefined : namespaceInode(pid1, 'pid');
  const mountNamespace = pid1 === undefined ? undefined : namespaceInode(pid1, 'mnt');
  const pid1Start = pid1 === undefined ? undefined : startTime(pid1);
  if (pid1 === undefined || pidNamespace === undefined || mountNamespace === undefined || pid1Start === undefined || pidNamespace === host.pid) {
    child.kill('SIGKILL');
    throw new SandboxError('SANDBOX_BOOT_FAILED', `cannot find the sandbox's PID 1 below unshare (pid ${child.pid})`);
  }
  return { child, exited, closed, pid1, pid1Start, pidNamespace, mountNamespace };
}
