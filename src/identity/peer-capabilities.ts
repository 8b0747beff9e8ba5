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
 * Whether the process `pidfd` names holds `capability` in its effective set now: its status is read
 * by PID, then the pidfd is asked again for that PID, so the file read was that live process's (a
 * process that exited meanwhile, its PID perhaps reused, reads as false). Any failure is false.
 */
export function pidfdHasCapability(pidfd: number, capability: number, binding: Pick<NativeBinding, 'pidfdPid'> = native(), readStatus: (pid: number) => string = (pid) => readFileSync(`/proc/${pid}/status`, 'utf8')): boolean {
  try {
    const pid = binding.pidfdPid(pidfd);
    if (!(pid > 0)) return false;
    const mask = effectiveCapabilities(readStatus(pid));
    if (binding.pidfdPid(pidfd) !== pid || mask === undefined) return false;
    return (mask & (1n << BigInt(capability))) !== 0n;
  } catch {
    return false;
  }
}
