// The one typed loader of the native addon: only what Node cannot do, fds and primitives in and out.
// Errors thrown by these functions look like Node's own: `code` ('EBADF'…), `errno`, `syscall`.
import { createRequire } from 'node:module';
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface PeerCredentials {
  pid: number;
  uid: number;
  gid: number;
}

export interface ReceivedMessage {
  /** Bytes read; 0 means the peer closed its end (EOF). */
  bytes: number;
  /** Descriptors that arrived with these bytes (SCM_RIGHTS), already close-on-exec. The caller owns them. */
  fds: number[];
  /** MSG_TRUNC: the datagram was longer than the buffer (never for stream sockets). */
  truncated: boolean;
  /** MSG_CTRUNC: more control data arrived than fits; the kernel dropped the rest. */
  controlTruncated: boolean;
  /** A control message other than SCM_RIGHTS arrived (it was discarded). */
  foreignControl: boolean;
  /** SCM_CREDENTIALS, only on a socket with SO_PASSCRED (connectUnix's passCredentials): the kernel's
   * record of who sent these bytes, which the sender cannot forge without CAP_SYS_ADMIN and CAP_SETUID. */
  credentials?: { pid: number; uid: number; gid: number };
}

export interface PollEvents {
  readable: boolean;
  writable: boolean;
  /** The peer shut its writing side down or closed (POLLRDHUP / POLLHUP). */
  hangup: boolean;
  /** POLLERR, or the poll failed (then `status` < 0 is a negative errno). */
  error: boolean;
  status: number;
}

export interface WatchInterest {
  readable?: boolean;
  writable?: boolean;
  /** Report the peer's hang-up (POLLRDHUP) even when not watching for readability. */
  hangup?: boolean;
}

export interface FdWatcher {
  /** Change what is watched; an empty interest stops watching without closing. */
  update(interest: WatchInterest): void;
  /** Stop watching for good. Does not close the fd. Idempotent. */
  close(): void;
}

export interface NativeBinding {
  /** SO_PEERCRED of a connected Unix socket. */
  peerCredentials(fd: number): PeerCredentials;
  /** SO_PEERPIDFD (option 77): a close-on-exec pidfd of the peer at connect time. Throws ENOPROTOOPT where the kernel lacks it. */
  peerPidfd(fd: number): number;
  /** pidfd_open(pid, 0), close-on-exec. */
  pidfdOpen(pid: number): number;
  /** PID behind a pidfd (the "Pid:" line of its fdinfo); throws ESRCH when the process is gone. */
  pidfdPid(pidfd: number): number;
  /** The cgroup v2 path ("0::" line) of a pidfd's process, read from /proc and confirmed afterwards
   * (pidfd_send_signal 0) to still belong to the same live process; throws ESRCH otherwise. */
  pidfdCgroup(pidfd: number): string;
  /** pidfdCgroup with the process's start time (field 22 of /proc/PID/stat, clock ticks since boot),
   * both read by PID and then confirmed to belong to the pidfd's live process; throws ESRCH otherwise. */
  pidfdIdentity(pidfd: number): { pid: number; cgroup: string; startTicks: number };
  /** recvmsg with MSG_DONTWAIT | MSG_CMSG_CLOEXEC into buffer[offset, offset+length). Control space is
   * always for the most descriptors one message can carry (253), so the kernel drops none in our
   * thread: `maxFds` (what the caller expects) is only checked for range; the caller counts `fds`.
   * Returns null when it would block. */
  recvmsg(fd: number, buffer: Buffer, offset: number, length: number, maxFds: number): ReceivedMessage | null;
  /** recv with MSG_PEEK | MSG_DONTWAIT and no control buffer: the bytes (and any descriptors on them)
   * stay queued. The bytes peeked into buffer[offset, offset+length), 0 at EOF, -1 when none are queued. */
  peek(fd: number, buffer: Buffer, offset: number, length: number): number;
  /** The last close's preparation of a peer's Unix socket (peer-close.ts): shutdown(SHUT_RD), then every
   * queued message read away, its descriptors closed as closeReceived does. It stops while the close
   * pool's queue is long (`complete` false): what is left stays queued, and the caller drains again later.
   * `fastDevices`: as for closeReceived. */
  drainPeer(fd: number, fastDevices?: string[]): { messages: number; closed: number; detached: number; complete: boolean };
  /** A refusal in one call: buffer[offset, offset+length) sent with MSG_DONTWAIT | MSG_NOSIGNAL, any failure ignored (never
   * thrown), then drainPeer's drain, then close(fd) if it completed. True when `fd` is closed; false
   * when the close pool's queue is long and the drain must go on later (peer-close.ts). */
  refusePeer(fd: number, buffer: Buffer, offset: number, length: number): boolean;
  /** Closes a peer's descriptors: at once a pipe, an anonymous inode or a file on one of `fastDevices`
   * ("major:minor" of non-FUSE mounts; without the list, the non-FUSE mounts of /proc/self/mountinfo,
   * read only if a file needs it); every other one (sockets, FUSE, mounts we cannot see) on the close
   * pool, one copy of each socket (the others, not the last reference, at once). */
  closeReceived(fds: number[], fastDevices?: string[]): { closed: number; detached: number };
  /** sendmsg with MSG_DONTWAIT | MSG_NOSIGNAL, attaching fds (SCM_RIGHTS) when given.
   * Returns bytes sent, or -1 when it would block. */
  sendmsg(fd: number, buffer: Buffer, offset: number, length: number, fds?: number[]): number;
  /** socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC) with 128 KiB send and receive buffers on both ends
   * (or `bufferBytes`, which the kernel doubles). */
  socketpair(bufferBytes?: number): [number, number];
  /** SO_SNDBUF and SO_RCVBUF as the kernel reports them. */
  socketBufferSizes(fd: number): { send: number; receive: number };
  shutdown(fd: number, how: 'read' | 'write' | 'both'): void;
  /** SO_PASSRIGHTS (Linux 6.16): whether the Unix socket accepts SCM_RIGHTS (off: the sender gets EPERM;
   * accepted connections inherit the listener's). false when the kernel lacks the option. */
  setPassRights(fd: number, allow: boolean): boolean;
  /** fcntl(F_DUPFD_CLOEXEC). */
  dupCloexec(fd: number): number;
  /** Set or clear O_NONBLOCK. */
  setNonBlocking(fd: number, on: boolean): void;
  setCloexec(fd: number): void;
  /** prctl(PR_SET_DUMPABLE, 0): no ptrace, /proc/<pid>/mem or fd of this process for a uid-0 peer without CAP_SYS_PTRACE. */
  setNonDumpable(): void;
  /** prctl(PR_GET_DUMPABLE). */
  isDumpable(): boolean;
  /** Device, inode, whether it is a directory, a socket or pipe, and the device as "major:minor", from
   * statx(AT_STATX_DONT_SYNC): the kernel's cached attributes, so the file system (FUSE, NFS) is never
   * asked and cannot make the caller wait. */
  statCached(fd: number): { dev: bigint; ino: bigint; directory: boolean; socketOrPipe: boolean; unixSocket: boolean; device: string };
  /** close(fd) on the close pool: at most `closeThreads().max` threads, fed from one queue, for a peer's
   * descriptor whose close could block without end (FUSE). Queued ones stay open until a thread is free. */
  closeDetached(fd: number): void;
  /** Closes not done: inside close(2) on a pool thread, or queued for one. */
  pendingCloses(): number;
  /** The close pool: threads running, of them inside close(2), descriptors queued, the bound on threads,
   * and the queue's length at which a drain takes no more (drainPeer). */
  closeThreads(): { threads: number; closing: number; queued: number; max: number; maxQueued: number };
  /** socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK), bind(path), listen(backlog). */
  listenUnix(path: string, backlog: number): number;
  /** accept4 with SOCK_CLOEXEC | SOCK_NONBLOCK; -1 when nothing is pending. */
  accept(fd: number): number;
  /** Up to `max` accept4 calls, each followed by SO_PEERCRED: fd, pid, uid, gid per connection (uid and
   * gid as int32: read them with `>>> 0`; pid is -errno when SO_PEERCRED failed). Empty when nothing is
   * pending; throws accept4's error only when it failed before any connection was accepted. */
  acceptBatch(fd: number, max: number): Int32Array;
  /** A non-blocking connect to a Unix stream socket path; returns the connected fd (close-on-exec, non-blocking).
   * `passCredentials` sets SO_PASSCRED first: every message read then carries its sender's credentials. */
  connectUnix(path: string, passCredentials?: boolean): number;
  /** Watch an fd on the event loop (uv_poll, with POLLRDHUP). The callback runs on the loop thread. */
  watch(fd: number, interest: WatchInterest, callback: (events: PollEvents) => void): FdWatcher;
  /** One datagram to an sd_notify socket: a path, or an abstract name starting with "@". */
  sdNotify(socketPath: string, state: string): void;
  /** pidfd_send_signal(pidfd, signal, NULL, 0). */
  pidfdSendSignal(pidfd: number, signal: number): void;
}

let loaded: NativeBinding | undefined;

/** The platforms build.mjs makes binaries for, each in dist/<name>/ (linux-arm64 where its cross compiler
 * is installed); what a package carries is what its dist/ holds (shippedPlatforms). */
export const PREBUILT_PLATFORMS = ['linux-x64', 'linux-arm64'] as const;
/** The oldest glibc the prebuilt binaries run on: the highest GLIBC_ symbol version they need (objdump -T). */
export const PREBUILT_GLIBC = '2.34';

/** This process's platform as the prebuilt binaries' directories name it, e.g. "linux-x64". */
export function platformName(platform: string = process.platform, arch: string = process.arch): string {
  return `${platform}-${arch}`;
}

/** The platform directories beside the places looked (dist/<platform>/), for the message below. */
function shippedPlatforms(looked: readonly string[]): string[] {
  const found = new Set<string>();
  for (const dir of new Set(looked.map((path) => dirname(dirname(path))))) {
    try {
      for (const name of readdirSync(dir)) if (/^linux-[a-z0-9]+$/.test(name)) found.add(name);
    } catch {}
  }
  return [...found].sort();
}

/** What to say when no binary fits this platform: which one this is, which ones ship, how to build. */
export function noPrebuiltMessage(what: string, platform: string, looked: readonly string[]): string {
  const shipped = shippedPlatforms(looked);
  return (
    `no ${what} for ${platform}: this package carries prebuilt binaries for ${shipped.length ? shipped.join(', ') : 'no platform'} (glibc >= ${PREBUILT_GLIBC}) ` +
    `(looked in ${looked.join(', ')}). Build it from a checkout of the source: npm ci && node build.mjs (needs make, a C/C++ compiler and Python)`
  );
}

/** Where the addon sits: in dist/<platform>/ beside a bundle (or one level up from the library in
 * dist/lib/ and two from its chunks), beside the bundle itself, or in build/Release of a checkout. */
export function addonPath(platform: string = platformName()): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [
    ...[here, join(here, '..'), join(here, '..', '..')].map((dir) => join(dir, platform, 'opencode_pty.node')),
    join(here, 'opencode_pty.node'),
    join(here, '..', '..', 'build', 'Release', 'opencode_pty.node'),
    join(here, '..', 'build', 'Release', 'opencode_pty.node'),
  ];
  const found = candidates.find((path) => existsSync(path));
  if (!found) throw new Error(noPrebuiltMessage('native addon (opencode_pty.node)', platform, candidates));
  return found;
}

/** Loads the addon on first use. */
export function native(): NativeBinding {
  if (loaded) return loaded;
  const path = addonPath();
  try {
    loaded = createRequire(import.meta.url)(path) as NativeBinding;
  } catch (cause) {
    // A binary for another libc (musl) or an older glibc fails here, in dlopen.
    throw new Error(`cannot load the native addon ${path} on ${platformName()}: ${(cause as Error).message}; ${noPrebuiltMessage('usable native addon', platformName(), [path])}`, { cause });
  }
  return loaded;
}
