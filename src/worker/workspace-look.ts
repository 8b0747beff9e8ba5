// The I/O edge of workspace-check.ts: what root reads to judge a workspace START. Everything starts from
// the START's own descriptor: its ancestors by `..` (the kernel's parent links, no lookup asked of the
// file system), and from the topmost one, the client's root as its mount tree has it, the named trees
// resolved one component at a time with O_PATH|O_NOFOLLOW, so a symlink anywhere on the way is a refusal
// rather than a path followed. Identities are statx(AT_STATX_DONT_SYNC) device and inode numbers (the
// kernel's cached attributes: a FUSE server is never asked), the file system type /proc/self/mountinfo's,
// or, for a mount only the client's namespace has, statfs(2)'s magic number (FUSE answers that itself
// for root unless mounted allow_other, which needs user_allow_other in /etc/fuse.conf: docs/security.md).
import { closeSync, constants, openSync, readFileSync, statfsSync } from 'node:fs';
import { native } from '../native/index.ts';
import { ErrorCode, SessionError } from '../protocol/index.ts';
import { UNIT_PATH } from '../systemd/index.ts';
import { judgeWorkspace, PROTECTED_IN_HOME, type FileKey, type NamedTree, type WorkspaceFacts } from './workspace-check.ts';

/** open(2) O_PATH (not in Node's constants). */
const O_PATH = 0o10000000;
/** Deeper than any real tree; a loop of `..` is a kernel impossibility, this only bounds the walk. */
const MAX_DEPTH = 4096;

type Stat = { dev: bigint; ino: bigint; directory: boolean; device: string };

function stat(fd: number): Stat {
  return native().statCached(fd);
}

function keyOf(s: Stat): FileKey {
  return `${s.dev}:${s.ino}`;
}

/** `name` (one component, or `..`) beneath our descriptor `fd`, through its /proc magic link. */
function openBeneath(fd: number, name: string): number {
  return openSync(`/proc/self/fd/${fd}/${name}`, O_PATH | constants.O_NOFOLLOW);
}

/** The file system type of a device ("major:minor") from our mountinfo (its fields: man proc(5)). */
export function fsTypeOf(device: string, mountinfo: string): string | undefined {
  for (const line of mountinfo.split('\n')) {
    const fields = line.split(' ');
    const dash = fields.indexOf('-');
    if (fields[2] === device && dash > 0) return fields[dash + 1];
  }
  return undefined;
}

/** statfs(2) f_type of the pseudo file systems (linux/magic.h); devtmpfs reports tmpfs's, so /dev is named too. */
const MAGIC: ReadonlyMap<number, string> = new Map([
  [0x9fa0, 'proc'], [0x62656572, 'sysfs'], [0x27e0eb, 'cgroup'], [0x63677270, 'cgroup2'], [0x1cd1, 'devpts'],
  [0x73636673, 'securityfs'], [0x64626720, 'debugfs'], [0x74726163, 'tracefs'], [0xcafe4a11, 'bpf'], [0x6165676c, 'pstore'],
  [0xde5e81e4, 'efivarfs'], [0x62656570, 'configfs'], [0x65735543, 'fusectl'], [0x19800202, 'mqueue'], [0x42494e4d, 'binfmt_misc'],
  [0x958458f6, 'hugetlbfs'], [0xf97cff8c, 'selinuxfs'], [0x6e736673, 'nsfs'], [0x0187, 'autofs'],
]);

function fsTypeByMagic(fd: number): string {
  const magic = Number(statfsSync(`/proc/self/fd/${fd}`).type);
  return MAGIC.get(magic) ?? `magic 0x${magic.toString(16)}`;
}

/** Keys of `path`'s components beneath `rootFd`, nearest the root first, each a directory opened without
 * following it; stops at the first that does not exist. `fd`: the last one's descriptor when it exists. */
function resolve(rootFd: number, path: string, opened: number[]): { keys: FileKey[]; complete: boolean; fd?: number; problem?: string } {
  const keys: FileKey[] = [];
  let current = rootFd;
  const parts = path.split('/').filter(Boolean);
  for (const [index, part] of parts.entries()) {
    if (part === '..' || part === '.') return { keys, complete: false, problem: `${path} is not a plain path` };
    let next: number;
    try {
      next = openBeneath(current, part);
    } catch (error) {
      if ((error as { code?: string }).code === 'ENOENT') return { keys, complete: false };
      return { keys, complete: false, problem: (error as Error).message };
    }
    opened.push(next);
    const s = stat(next);
    if (!s.directory) return { keys, complete: false, problem: `${parts.slice(0, index + 1).join('/')} is a symlink or not a directory` };
    keys.push(keyOf(s));
    current = next;
  }
  return { keys, complete: true, fd: current };
}

function tree(name: string, base: FileKey[], found: ReturnType<typeof resolve>): NamedTree {
  const all = [...base, ...found.keys];
  if (found.problem) return { name, ancestors: all, problem: found.problem };
  if (!found.complete) return { name, ancestors: all };
  return { name, key: all[all.length - 1], ancestors: all.slice(0, -1) };
}

/** `fd`'s key and its ancestors' ([0] its own, last the topmost), and the topmost's descriptor: the
 * root of the client's tree, where names are resolved (not in ours: the supervisor's unit hides /home,
 * ProtectHome=). Descriptors opened go to `opened`, the caller's to close. */
export function ancestry(fd: number, opened: number[]): { chain: FileKey[]; root: number } {
  const chain: FileKey[] = [keyOf(stat(fd))];
  let current = fd;
  for (let depth = 0; depth < MAX_DEPTH; depth++) {
    const parent = openBeneath(current, '..');
    opened.push(parent);
    const key = keyOf(stat(parent));
    if (key === chain[chain.length - 1]) break;
    chain.push(key);
    current = parent;
  }
  return { chain, root: current };
}

/** The key of `path` in the client's tree, when it resolves there. */
function keyIn(root: number, path: string, opened: number[]): FileKey | undefined {
  const found = resolve(root, path, opened);
  return found.complete ? found.keys[found.keys.length - 1] : undefined;
}

/** An operator's path under the home, found a directory without a symlink on its way in the client's tree:
 * PID 1 binds it back into the covered home, and the helper checks the bind is this directory. */
export interface HomeBind {
  path: string;
  key: FileKey;
  writable: boolean;
}

/** The operator's paths strictly below `home`, each resolved from the client's root; one that does not
 * resolve (missing, a symlink on its way, not a directory) is not bound, so it grants nothing; one at or
 * inside the workspace (`workspace`: its key) is there with it already. */
function homeBinds(root: number, home: string, workspace: FileKey, paths: readonly { path: string; writable: boolean }[], opened: number[]): HomeBind[] {
  const binds: HomeBind[] = [];
  for (const { path, writable } of paths) {
    // What a unit file cannot carry is not bound (session.workspaceRead is not held to that at load).
    if (!path.startsWith(`${home}/`) || !UNIT_PATH.test(path)) continue;
    const found = resolve(root, path, opened);
    if (found.complete && !found.problem && found.keys.length > 0 && !found.keys.includes(workspace)) binds.push({ path, key: found.keys[found.keys.length - 1]!, writable });
  }
  return binds;
}

/** The facts for `fd` (the START's directory), for the account with `home` and `uid`; `clientTmp`, `clientShm`:
 * the keys of /tmp and /dev/shm in the client's tree, which the session's own must not be (native/session/mounts.c);
 * `binds`: the operator's `paths` under the home that PID 1 binds back into the covered home. */
export function lookWorkspace(fd: number, account: { home?: string; uid: number }, paths: readonly { path: string; writable: boolean }[] = []): WorkspaceFacts & { clientTmp?: FileKey; clientShm?: FileKey; binds: HomeBind[] } {
  const opened: number[] = [];
  try {
    const own = stat(fd);
    const fsType = fsTypeOf(own.device, readFileSync('/proc/self/mountinfo', 'utf8')) ?? fsTypeByMagic(fd);
    const { chain, root } = ancestry(fd, opened);
    const rootKey = chain[chain.length - 1]!;
    const named: NamedTree[] = [];
    for (const system of ['/dev', '/proc', '/sys', `/run/user/${account.uid}`]) named.push(tree(system, [rootKey], resolve(root, system, opened)));
    const clientTmp = keyIn(root, '/tmp', opened);
    const clientShm = keyIn(root, '/dev/shm', opened);
    if (account.home === undefined) {
      named.push({ name: '~', ancestors: [], problem: "the account's home is not known" });
      return { fsType, chain, named, clientTmp, clientShm, binds: [] };
    }
    const home = resolve(root, account.home, opened);
    named.push(tree('~', [rootKey], home));
    if (home.fd !== undefined) {
      for (const name of PROTECTED_IN_HOME) named.push(tree(`~/${name}`, [rootKey, ...home.keys], resolve(home.fd, name, opened)));
    }
    return { fsType, chain, named, clientTmp, clientShm, binds: homeBinds(root, account.home, chain[0]!, paths, opened) };
  } finally {
    for (const descriptor of opened) closeSync(descriptor);
  }
}

/** Throws BAD_START when `fd` may not be a workspace; nothing that cannot be examined passes. Returns the
 * helper's arguments the look gave (the client's /tmp and /dev/shm, which the unit's must not be; the
 * operator's paths bound back into the home, which the helper checks) and those binds, for the unit. */
export function checkWorkspace(fd: number, account: { home?: string; uid: number }, paths: readonly { path: string; writable: boolean }[] = []): { helperArgs: string[]; binds: HomeBind[] } {
  let why: string | undefined;
  let facts: ReturnType<typeof lookWorkspace> | undefined;
  try {
    facts = lookWorkspace(fd, account, paths);
    why = judgeWorkspace(facts);
  } catch (error) {
    why = `the working directory cannot be examined: ${(error as Error).message}`;
  }
  if (why || !facts) throw new SessionError(ErrorCode.BAD_START, `workspace refused: ${why}`);
  const helperArgs = [
    ...(facts.clientTmp === undefined ? [] : [`--client-tmp=${facts.clientTmp}`]),
    ...(facts.clientShm === undefined ? [] : [`--client-shm=${facts.clientShm}`]),
    ...facts.binds.map((bind) => `--home-bind=${bind.key}:${bind.path}`),
  ];
  return { helperArgs, binds: facts.binds };
}
