// Runs commands inside the sandbox: nsenter into every namespace of PID 1, then setpriv to the account.
import { spawn, type ChildProcess } from 'node:child_process';
import { SandboxError } from './errors.ts';
import { childrenOf, namespaceInode } from './namespaces.ts';
import type { TestAccount } from './seed.ts';

export interface ExecResult {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}

export interface ExecOptions {
  as?: 'root' | 'client' | 'other';
  uid?: number;
  gid?: number;
  /** Supplementary groups instead of the account's own (e.g. to reach a 0660 socket with a wrong gid). */
  groups?: number[];
  input?: string | Buffer;
  env?: Record<string, string>;
  cwd?: string;
  timeoutMs?: number;
}

const PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Runs the rest of argv only where the first stage left its marker: never on the host, even if the
 * PID nsenter was given now names a host process (a recycled PID). */
export const SANDBOX_GUARD = [
  '/bin/sh',
  '-c',
  'test -f /run/opencode-pty-sandbox || { echo "not inside the test sandbox; refusing" >&2; exit 125; }; exec "$@"',
  'sandbox-guard',
];
const ROOT: TestAccount = { user: 'root', group: 'root', uid: 0, gid: 0, home: '/root' };

/** The full argv that runs `argv` inside the sandbox whose PID 1 is `pid1` (pure). */
export function execArgv(pid1: number, argv: string[], options: ExecOptions, accounts: { client: TestAccount; other: TestAccount }): string[] {
  const named = options.as === 'client' ? accounts.client : options.as === 'other' ? accounts.other : ROOT;
  const uid = options.uid ?? named.uid;
  const gid = options.gid ?? (options.uid === undefined ? named.gid : uid);
  const account = [ROOT, accounts.client, accounts.other].find((a) => a.uid === uid);
  // nsenter forks into the pid namespace and does not pass signals on: the death signal makes
  // sure killing nsenter (a timeout, a killed spawn) kills the command too.
  const privileges = ['setpriv', '--pdeathsig', 'KILL'];
  if (uid !== 0 || gid !== 0) {
    // --init-groups needs the account's own primary group; any other gid gets no supplementary groups.
    const groups = options.groups ? `--groups=${options.groups.join(',')}` : account && account.gid === gid ? '--init-groups' : '--clear-groups';
    privileges.push('--reuid', String(uid), '--regid', String(gid), groups);
  }
  const home = account?.home ?? '/';
  const user = account?.user ?? String(uid);
  const env = { PATH, HOME: home, USER: user, LOGNAME: user, SHELL: '/bin/bash', LANG: 'C.UTF-8', ...options.env };
  return [
    'nsenter',
    '--target',
    String(pid1),
    '--all',
    '--root',
    '--wd',
    '--',
    ...SANDBOX_GUARD,
    ...privileges,
    '--',
    'env',
    '-i',
    '--chdir',
    options.cwd ?? (uid === 0 ? '/' : home),
    ...Object.entries(env).map(([key, value]) => `${key}=${value}`),
    ...argv,
  ];
}

/**
 * Spawns a full argv from execArgv(). kill() on the result signals the command inside, not
 * nsenter: nsenter passes no signals on, and a command orphaned by a killed nsenter is reparented
 * to the host's init, which need not reap it; its zombie would then stall systemd's shutdown.
 */
export function spawnInside(fullArgv: string[], input: string | Buffer | undefined, pidNamespace: number): ChildProcess {
  const child = spawn(fullArgv[0]!, fullArgv.slice(1), { stdio: ['pipe', 'pipe', 'pipe'], env: { PATH } });
  // A command that exits without reading its input closes the pipe: EPIPE is then no error of ours.
  child.stdin!.on('error', () => {});
  if (input !== undefined) child.stdin!.end(input.length > 0 ? input : undefined);
  const killNsenter = child.kill.bind(child);
  child.kill = (signal?: NodeJS.Signals | number) => {
    // The one child of nsenter is the command (setpriv execs env, env execs argv).
    const [inner] = child.pid === undefined ? [] : childrenOf(child.pid);
    if (inner === undefined || namespaceInode(inner, 'pid') !== pidNamespace) return killNsenter(signal);
    try {
      process.kill(inner, signal ?? 'SIGTERM');
      return true;
    } catch {
      return killNsenter(signal);
    }
  };
  return child;
}

export function runInside(fullArgv: string[], options: ExecOptions, pidNamespace: number): Promise<ExecResult> {
  return new Promise((resolve, reject) => {
    const child = spawnInside(fullArgv, options.input ?? '', pidNamespace);
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout!.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr!.on('data', (chunk: Buffer) => stderr.push(chunk));
    let timedOut = false;
    const timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            child.kill('SIGKILL');
          }, options.timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const result = { code, signal, stdout: Buffer.concat(stdout).toString(), stderr: Buffer.concat(stderr).toString() };
      if (timedOut) {
        const error = new SandboxError('SANDBOX_EXEC_TIMEOUT', `${fullArgv.join(' ')} ran past ${options.timeoutMs} ms: ${JSON.stringify(result)}`);
        reject(Object.assign(error, { result }));
      } else resolve(result);
    });
  });
}
