// Version 2's STARTED waits for the program's pid, which the session helper reports right after its
// fork. The helper runs as the client's user: its word is bounds-checked (helper-channel.ts) and taken
// once; it can only misname a process of the client's own user to the client.
import { readFileSync } from 'node:fs';
import { ErrorCode } from '../protocol/constants.ts';
import type { Frame } from '../protocol/frames.ts';
import { SessionError } from '../protocol/session-error.ts';

export class ProgramPid {
  #pid: number | undefined;
  #failure: SessionError | undefined;
  #wake: (() => void) | undefined;

  /** The helper's PID message (the decoder lets only one through). */
  reported(pid: number): void {
    this.#pid ??= pid;
    this.#wake?.();
  }

  /** The helper's end report: before a pid, the program never ran. */
  failed(text: string): void {
    if (this.#pid !== undefined) return;
    this.#failure ??= new SessionError(ErrorCode.START_FAILED, `the session could not start its program: ${text}`);
    this.#wake?.();
  }

  /** STARTED as `version` lays it out: version 2 names the program, so it waits for the helper's fork
   * (the unit's own end, or the helper's report of a failure before it, come first when the program
   * never ran) and takes the pid only if it can be the program. */
  async startedFrame(version: number, mainPid: number, unit: string, dropped: string[], wait: { unitDone: Promise<unknown>; timeoutMs: number }): Promise<Frame> {
    // Version 1 waits too, without naming it: a helper that dies before its fork (a start job systemd
    // counts as started because its process exited at once) is then START_FAILED, not a STARTED
    // followed by an error.
    const programPid = await this.wait(wait.unitDone, wait.timeoutMs);
    if (version < 2) return { type: 'started', mainPid, unit };
    if (programPid === mainPid || programInUnit(programPid, mainPid, unit, (path) => readFileSync(path, 'utf8')) === false) {
      throw new SessionError(ErrorCode.INTERNAL, `the session helper named pid ${programPid}, which is not its program`);
    }
    return { type: 'started', mainPid, unit, programPid, droppedEnv: dropped };
  }

  /** Resolves with the pid; rejects when the helper failed first, the unit ended first, or at the deadline. */
  wait(unitDone: Promise<unknown>, timeoutMs: number): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const settle = () => {
        if (this.#pid !== undefined) resolve(this.#pid);
        else if (this.#failure) reject(this.#failure);
        else return false;
        clearTimeout(timer);
        this.#wake = undefined;
        return true;
      };
      if (settle()) return;
      this.#wake = settle;
      timer = setTimeout(() => {
        this.#failure ??= new SessionError(ErrorCode.INTERNAL, `the session helper named no program within ${timeoutMs} ms`);
        settle();
      }, timeoutMs);
      void unitDone.then(() => {
        this.#failure ??= new SessionError(ErrorCode.START_FAILED, 'the session unit ended before its program started');
        settle();
      });
    });
  }
}

/** The cgroup v2 path in /proc/PID/cgroup ("0::/system.slice/u.service"), or undefined when unreadable. */
function cgroupPath(pid: number, read: (path: string) => string): string | undefined {
  try {
    return read(`/proc/${pid}/cgroup`).split('\n').find((entry) => entry.startsWith('0::'))?.slice(3);
  } catch {
    return undefined;
  }
}

/**
 * Whether the helper's pid names a process of the session's own cgroup: false only when it names a
 * live process elsewhere. Undefined when this process cannot tell: the helper (the unit's MainPID) is
 * not seen in the unit from here (another pid namespace), or the program has already ended.
 * The whole path is compared with the helper's, never its last part: the client's user may make a
 * cgroup of the same name under its own delegated subtree (user@.service) and put a process there.
 */
export function programInUnit(pid: number, mainPid: number, unit: string, read: (path: string) => string): boolean | undefined {
  const own = cgroupPath(mainPid, read);
  if (own === undefined || own.split('/').pop() !== unit) return undefined;
  const found = cgroupPath(pid, read);
  return found === undefined ? undefined : found === own;
}
