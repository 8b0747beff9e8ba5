// The session helper reports the program's pid right after its fork, before it writes anything (then
// STARTED, which names it in version 2). The helper runs as the client's user: its word is
// bounds-checked (helper-channel.ts) and taken once; it can only misname a process of the client's own
// user to the client, and a session whose helper does is ended.
import { readFileSync } from 'node:fs';
import { ErrorCode, type Frame, SessionError } from '../protocol/index.ts';

export class ProgramPid {
  #pid: number | undefined;
  #failure: SessionError | undefined;
  #wake: (() => void) | undefined;

  /** The helper's PID message (the decoder lets only one through). */
  reported(pid: number): void {
    this.#pid ??= pid;
    this.#wake?.();
  }

  /** Whether the helper named its program: before that it has written nothing to the client. */
  get known(): boolean {
    return this.#pid !== undefined;
  }

  /** The helper's end report: before a pid, the program never ran. */
  failed(text: string): void {
    if (this.#pid !== undefined) return;
    this.#failure ??= new SessionError(ErrorCode.START_FAILED, `the session could not start its program: ${text}`);
    this.#wake?.();
  }

  /** The program's pid once the helper names it (the unit's own end, or the helper's report of a
   * failure before it, come first when the program never ran), checked where this process can: in
   * version 2 the client was told it in STARTED. Version 1 waits too, without naming it: a helper
   * that dies before its fork (a start job systemd counts as started because its process exited at
   * once) is then START_FAILED, not a STARTED followed by an error. */
  async confirm(version: number, mainPid: number, unit: string, wait: { unitDone: Promise<unknown>; timeoutMs: number }): Promise<number> {
    const programPid = await this.wait(wait.unitDone, wait.timeoutMs);
    if (version >= 2 && (programPid === mainPid || programInUnit(programPid, mainPid, unit, (path) => readFileSync(path, 'utf8')) === false)) {
      throw new SessionError(ErrorCode.INTERNAL, `the session helper named pid ${programPid}, which is not its program`);
    }
    return programPid;
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

/** STARTED as the worker lays it out for the helper, which writes it with both pids in place (native/session/control.c). */
export function startedTemplate(version: number, unit: string, dropped: string[], sessionId?: number): Frame {
  const placeholder = 1;
  if (version < 2) return { type: 'started', mainPid: placeholder, unit };
  // Version 3 names the session's id, kept or not (an ATTACH to a session that is not kept is NO_SESSION).
  if (version >= 3) return { type: 'started', mainPid: placeholder, unit, programPid: placeholder, droppedEnv: dropped, sessionId };
  return { type: 'started', mainPid: placeholder, unit, programPid: placeholder, droppedEnv: dropped };
}
