// Shared helpers for the native addon's tests: fd accounting, fd flags, temporary directories, child processes.
import { closeSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';

/** Entries of /proc/self/fd: compare before and after to find leaks. */
export { openFdCount } from '../support/fds.ts';

/** This process's fds and what each names, for leakedSince(). */
export function openFds(): Map<string, string> {
  const fds = new Map<string, string>();
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      fds.set(fd, readlinkSync(`/proc/self/fd/${fd}`));
    } catch {
      // the directory's own fd, closed by now
    }
  }
  return fds;
}

/**
 * The fds open now that were not open (naming the same thing) at `before`. A count would also move
 * when the runtime closes one of its own in between (seen on a fresh clone), and hide a leak then.
 */
export function leakedSince(before: Map<string, string>): string[] {
  return [...openFds()].filter(([fd, target]) => before.get(fd) !== target).map(([fd, target]) => `${fd} -> ${target}`);
}

/** The octal "flags:" field of an fd's fdinfo. */
export function fdFlags(fd: number): number {
  const line = readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8').split('\n').find((l) => l.startsWith('flags:'));
  if (!line) throw new Error(`no flags line for fd ${fd}`);
  return parseInt(line.slice('flags:'.length).trim(), 8);
}

/** O_CLOEXEC as fdinfo reports it (octal 02000000). */
export const O_CLOEXEC = 0o2000000;
/** O_NONBLOCK (octal 04000). */
export const O_NONBLOCK = 0o4000;

export function closeAll(fds: Iterable<number>): void {
  for (const fd of fds) closeSync(fd);
}

/** A private directory under the system temp dir, removed by the returned function. */
export function tempDir(): { path: string; remove: () => void } {
  const path = mkdtempSync(join(tmpdir(), 'opencode-pty-test-'));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

export interface ChildResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs a program to its end, collecting its output. */
export function runChild(command: string, args: string[], env?: NodeJS.ProcessEnv): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    // The timeout is a safety net against a hung child, never an assertion: a killed child fails the test.
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env: env ?? process.env, timeout: 60_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/** Resolves once `text` has appeared on a readable stream (a child announcing it is ready). */
export function waitForOutput(stream: NodeJS.ReadableStream, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const onData = (chunk: Buffer | string) => {
      seen += chunk.toString();
      if (seen.includes(text)) {
        stream.off('data', onData);
        resolve(seen);
      }
    };
    stream.on('data', onData);
    stream.once('end', () => reject(new Error(`stream ended before "${text}"; got ${JSON.stringify(seen)}`)));
  });
}
