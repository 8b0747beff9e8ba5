// The workspace's `.git`, kept read-only: Landlock cannot take a right away inside the granted tree, so
// PID 1 binds it read-only in the unit (BindReadOnlyPaths=) and the session helper checks, on its own
// descriptor before it forks, that what it finds there is that read-only mount of the very file root
// saw here (native/session/landlock.c). A `.git` that is a `gitdir:` pointer file is bound read-only
// itself; the directory it names must lie outside the workspace (Landlock keeps the program from
// writing there; one inside could be renamed away and replaced), or the START is refused.
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { native } from '../native/index.ts';
import { ErrorCode, SessionError } from '../protocol/index.ts';
import { ancestry } from './workspace-look.ts';

/** open(2) O_PATH (not in Node's constants). */
const O_PATH = 0o10000000;
/** A pointer file is one line; git itself reads no more than this of it. */
const MAX_POINTER = 4096;

export interface GitProtection {
  /** BindReadOnlyPaths= for the unit (paths as root reads the START's descriptor). */
  readOnlyPaths: string[];
  /** The helper's `--readonly-git=DEV:INO`, absent when there is no `.git`. */
  helperArgs: string[];
}

/** The directory a `gitdir:` pointer names, or undefined when the text is not one (gitrepository-layout(5)). */
export function gitPointerTarget(text: string): string | undefined {
  const match = /^gitdir: (.+?)\r?\n?$/.exec(text);
  return match?.[1];
}

/**
 * Whether systemd 252 writes the path into the transient unit file so that it reads back the same:
 * it escapes only `%` in BindReadOnlyPaths= (dbus-execute.c), whose parser splits on whitespace and `:`.
 */
export function bindablePath(path: string): boolean {
  return /^\/[^\0-\x20\x7f:"'\\]*$/.test(path) && !path.endsWith(' (deleted)');
}

function refuse(why: string): SessionError {
  return new SessionError(ErrorCode.BAD_START, `workspace refused: ${why}`);
}

const key = (fd: number) => {
  const s = native().statCached(fd);
  return { dev: s.dev, ino: s.ino, directory: s.directory, id: `${s.dev}:${s.ino}` };
};

/** What keeps `.git` in the START's directory `cwdFd` (at `cwdPath`) read-only; throws BAD_START when it cannot be kept so. */
export function protectGit(cwdFd: number, cwdPath: string): GitProtection {
  let git: number;
  try {
    git = openSync(`/proc/self/fd/${cwdFd}/.git`, O_PATH | constants.O_NOFOLLOW);
  } catch (error) {
    if ((error as { code?: string }).code === 'ENOENT') return { readOnlyPaths: [], helperArgs: [] };
    throw refuse(`.git cannot be examined: ${(error as Error).message}`);
  }
  const opened = [git];
  try {
    const found = key(git);
    const path = `${cwdPath}/.git`;
    if (!bindablePath(path)) throw refuse(`the path of .git (${JSON.stringify(path)}) cannot be bound read-only by systemd (whitespace, ':', quotes or '\\\\')`);
    const protection = { readOnlyPaths: [path], helperArgs: [`--readonly-git=${found.dev}:${found.ino}`] };
    if (found.directory) return protection;
    checkPointer(cwdFd, opened);
    return protection;
  } finally {
    for (const fd of opened) closeSync(fd);
  }
}

/** A pointer file's target must exist outside the workspace: judged by its own ancestors' keys. */
function checkPointer(cwdFd: number, opened: number[]): void {
  let file: number;
  try {
    // O_NOFOLLOW: a symlink is ELOOP; O_NONBLOCK: a FIFO does not hold the open.
    file = openSync(`/proc/self/fd/${cwdFd}/.git`, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    throw refuse(`.git is neither a directory nor a gitdir: file (${(error as { code?: string }).code ?? (error as Error).message})`);
  }
  opened.push(file);
  if (!fstatSync(file).isFile()) throw refuse('.git is neither a directory nor a gitdir: file');
  const buffer = Buffer.alloc(MAX_POINTER);
  const target = gitPointerTarget(buffer.subarray(0, readSync(file, buffer, 0, MAX_POINTER, 0)).toString('utf8'));
  if (target === undefined) throw refuse('.git is a file but not a gitdir: pointer');
  const workspace = ancestry(cwdFd, opened);
  let dir: number;
  try {
    // Resolved from the client's root (an absolute target) or from the workspace (a relative one), as git would.
    dir = openSync(target.startsWith('/') ? `/proc/self/fd/${workspace.root}${target}` : `/proc/self/fd/${cwdFd}/${target}`, O_PATH | constants.O_DIRECTORY);
  } catch (error) {
    throw refuse(`the gitdir: of .git cannot be judged: ${(error as { code?: string }).code ?? (error as Error).message}`);
  }
  opened.push(dir);
  const named = ancestry(dir, opened).chain;
  // Inside the workspace it could be renamed away and replaced; an ancestor of it holds the workspace.
  if (named.includes(workspace.chain[0]!) || workspace.chain.includes(named[0]!)) {
    throw refuse('the gitdir: of .git lies inside the working directory or holds it, where it cannot be kept read-only');
  }
}
