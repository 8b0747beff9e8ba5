// What a session leaves for the record: its program and times, version 2's end record for its client,
// and root's journal line at its end (systemd's figures there, never the helper's).
import type { EndReport, PeerIdentity } from '../control/index.ts';
import { SessionError, type Accounting, type ErrorCodeValue, type Frame } from '../protocol/index.ts';
import type { ExitStatus } from '../systemd/index.ts';
import { logSessionEnd, type SessionFigures } from './accounting.ts';
import { endRecord } from './end-record.ts';
import type { EndReason } from './final-frame.ts';
import type { SessionState } from './session-state.ts';

/** How a session ended, for its journal line (end-report.ts). */
export interface Ending {
  reason: EndReason;
  error?: SessionError;
  exit?: ExitStatus;
}

/** The error a session ended with, for its record: the start's failure ended in the handshake (none
 * when the client left), else the last frame's ERROR, as the error that wrote it when known. */
export function endingError(state: SessionState, frame: Frame | undefined): SessionError | undefined {
  if (state.endedIn === 'handshake') return state.clientGone ? undefined : state.failure;
  if (frame?.type !== 'error') return undefined;
  const known = [state.failure, state.workerError].find((error) => error?.wireCode === frame.code && error.message === frame.message);
  return known ?? new SessionError(frame.code as ErrorCodeValue, frame.message);
}

export class SessionRecord {
  /** The program's name as the unit's description gives it, for the journal. */
  program: string | undefined;
  /** process.hrtime.bigint() when the helper named its program (it writes STARTED right then) and when the unit ended. */
  #startedAt: bigint | undefined;
  #unitEndedAt: bigint | undefined;

  started(): void {
    this.#startedAt = process.hrtime.bigint();
    // A unit that ended while its start was still being confirmed (its program quicker than the PID's
    // turn) is seen ended by the started session only now: durationUsec runs from the worker's learning
    // the pid to its seeing the unit inactive (docs/protocol.md), never below zero.
    if (this.#unitEndedAt !== undefined) this.#unitEndedAt = process.hrtime.bigint();
  }

  unitEnded(): void {
    this.#unitEndedAt ??= process.hrtime.bigint();
  }

  /** Version 2's end record: the unit's figures (the helper's reading of its cgroup right before its
   * report, so no property read waits in front of the unit's end; systemd's when it sent none), the
   * helper's counts, and the time from STARTED to the unit's end. */
  async endRecord(figures: Promise<SessionFigures> | SessionFigures, report: EndReport | undefined): Promise<Accounting> {
    const duration = this.#startedAt !== undefined && this.#unitEndedAt !== undefined ? (this.#unitEndedAt - this.#startedAt) / 1000n : undefined;
    return endRecord(await figures, report, duration);
  }

  /** Root's journal line of the session's end, with systemd's figures. */
  log(unit: string | undefined, peer: PeerIdentity, ending: Ending | undefined, report: EndReport | undefined, figures: Promise<SessionFigures>): Promise<void> {
    return logSessionEnd(
      {
        unit,
        peer,
        reason: ending?.reason ?? 'error',
        exit: ending?.exit,
        error: ending?.error,
        bytesIn: report?.bytesIn,
        bytesOut: report?.bytesOut,
        program: this.program,
        durationMs: this.#startedAt === undefined ? undefined : ((this.#unitEndedAt ?? process.hrtime.bigint()) - this.#startedAt) / 1_000_000n,
      },
      figures,
    );
  }
}
