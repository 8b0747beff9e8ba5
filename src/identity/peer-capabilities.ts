// A peer's effective capabilities, read through its pidfd: the operator of kept sessions is a uid-0
// process that could ptrace the session's program anyway (CAP_SYS_PTRACE), not any uid-0 process (a
// sandboxed root service with every capability dropped is no operator). docs/security.md "Kept sessions".
import { readFileSync } from 'node:fs';
import { native, type NativeBinding } from '../native/index.ts';

/** capabilities(7), linux/capability.h. */
export const CAP_SYS_PTRACE = 19;

/** The CapEff mask of a /proc/PID/status text (proc(5)), or undefined when it has none. */
export function effectiveCapabilities(status: string): bigint | undefined {
  const line = /^CapEff:\s*([0-9a-fA-F]{1,16})$/m.exec(status);
  return line ? BigInt(`0x${line[1]}`) : undefined;
}

/**
 * A process's user namespace as we see it: its uid and gid maps, read from our namespace ('self' for
 * ours). /proc/PID/ns/user would name it exactly, but following that link takes ptrace access, which a
 * supervisor with no capabilities lacks over a capable root (cap_ptrace_access_check); the maps are
 * world-readable, and user_namespaces(7) shows each line's outside range in our terms. A peer in our
 * namespace reads exactly as we do; a child's maps differ ("0 0 1" for `unshare -U --map-root-user`,
 * root plus one user for `PrivateUsers=yes`) unless it maps every id we have to itself, which only a
 * writer with CAP_SETUID over our namespace can set up, and such a process can become the session's
 * account anyway.
 */
function userNamespaceOf(pid: number | 'self'): string {
  const map = (name: string) => readFileSync(`/proc/${pid}/${name}`, 'utf8').trim().split(/\s+/).join(' ');
  return `${map('uid_map')}|${map('gid_map')}`;
}

/**
 * Whether the process `pidfd` names holds `capability` in its effective set now, over our own user
 * namespace: capabilities(7) count only within the process's user namespace, so a uid-0 process in a
 * child namespace mapping 0 to 0 (`unshare -U --map-root-user`, `PrivateUsers=yes`) shows a full CapEff
 * and holds none over a session's program; it must share ours. Its status and namespace are read by
 * PID, then the pidfd is asked again for that PID, so what was read was that live process's (a process
 * that exited meanwhile, its PID perhaps reused, reads as false). Any failure is false.
 */
export function pidfdHasCapability(
  pidfd: number,
  capability: number,
  binding: Pick<NativeBinding, 'pidfdPid'> = native(),
  readStatus: (pid: number) => string = (pid) => readFileSync(`/proc/${pid}/status`, 'utf8'),
  userNamespace: (pid: number | 'self') => string = userNamespaceOf,
): boolean {
  try {
    const pid = binding.pidfdPid(pidfd);
    if (!(pid > 0)) return false;
    const mask = effectiveCapabilities(readStatus(pid));
    const sameNamespace = userNamespace(pid) === userNamespace('self');
    if (binding.pidfdPid(pidfd) !== pid || mask === undefined || !sameNamespace) return false;
    return (mask & (1n << BigInt(capability))) !== 0n;
  } catch {
    return false;
  }
}
