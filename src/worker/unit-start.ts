// The session unit's start, as far as the worker waits for it: the StartTransientUnit call with our
// own copies of the session's descriptors, and the helper's PID as soon as systemd announces its fork.
import { closeQuietly, drainPeer } from '../io/index.ts';
import { native } from '../native/index.ts';
import type { Units, StartedSession, SessionUnitSpec } from '../systemd/index.ts';
import { settled } from './start-errors.ts';

export interface UnitStart {
  /** The helper's PID (ExecMainPID) from the unit's signals at its fork, or from the job's end if that
   * comes first; rejects when the job failed first. */
  mainPid: Promise<number>;
  /** The start job (rejections are handled): its end, or its failure. */
  job: Promise<StartedSession>;
  /** Closes our copies of the descriptors now, once (done anyway when the job settles). */
  release(): void;
}

export interface UnitStartFds {
  /** The START directory: the unit's stdin. */
  cwdFd: number;
  /** The client connection: the unit's stdout. */
  clientFd: number;
  /** The helper's end of the control channel: the unit's stderr. Taken: closed here. */
  helperEnd: number;
}

/**
 * Asks for the unit. The call may wait for the bus (a reconnection) and marshal its descriptors only
 * then, while an abort meanwhile closes the session's own: it gets copies of its own, so no number
 * closed before it is sent can name another file by then. An abort before the start no longer needs
 * them leaves its job queued: a unit that still starts would find the environment and run the program
 * for a session already over, so the helper's end is shut for reading (the socket, so PID 1's copy
 * too) and what is queued read away: that helper meets EOF first and ends without forking ("the
 * control channel ended before the environment came").
 */
export function startUnit(manager: Units, name: string, spec: Omit<SessionUnitSpec, 'cwdFd' | 'stdoutFd' | 'stderrFd'>, fds: UnitStartFds, aborted: Promise<unknown>): UnitStart {
  const { helperEnd } = fds;
  let stdinFd = -1;
  let stdoutFd = -1;
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    for (const fd of [helperEnd, stdinFd, stdoutFd]) closeQuietly(fd);
  };
  void aborted.then(() => {
    if (!released) drainPeer(helperEnd);
  });
  let forked!: (mainPid: number) => void;
  const announced = new Promise<number>((resolve) => (forked = resolve));
  let job: Promise<StartedSession>;
  try {
    stdinFd = native().dupCloexec(fds.cwdFd);
    stdoutFd = native().dupCloexec(fds.clientFd);
    // The client connection itself is the helper's stdout: it speaks the data phase. The session's fd
    // stays one it never reads; systemd holds one more until it releases the unit.
    job = settled(manager.startSession(name, { ...spec, cwdFd: stdinFd, stdoutFd, stderrFd: helperEnd }, { forked }));
  } catch (error) {
    release();
    throw error;
  }
  job.then(release, release);
  return { mainPid: Promise.race([announced, job.then((started) => started.mainPid)]), job, release };
}

/**
 * `wait`, unless the start job fails first. A failed job is the start's error even when `wait` failed
 * first: the unit's watch sees a failed start end at JobRemoved (job.c job_uninstall), the job's own
 * error comes a readExit later.
 */
export async function unlessJobFails<T>(wait: Promise<T>, job: Promise<StartedSession>): Promise<T> {
  try {
    return await Promise.race([wait, job.then(() => new Promise<never>(() => undefined))]);
  } catch (error) {
    throw await job.then(
      () => error,
      (failure: unknown) => failure,
    );
  }
}
