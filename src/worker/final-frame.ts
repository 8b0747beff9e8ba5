// A session's end on the wire: what the worker writes once the unit is inactive (pure decision), and
// the bounded write of it ahead of anything queued.
import type { FdSocket } from '../io/index.ts';
import { ErrorCode, encodeFrame, errorFrame, type Accounting, type Frame, type SessionError } from '../protocol/index.ts';
import type { EndReport } from '../control/index.ts';
import type { ExitStatus } from '../systemd/index.ts';

/** How a session ended, for its journal line and the broker (end-report.ts). */
export type EndReason = 'exit' | 'stop' | 'client-gone' | 'error' | 'shutdown' | 'released';

export interface SessionOutcome {
  /** The client closed or reset its connection: it is sent nothing. */
  clientGone: boolean;
  /** Why the worker itself ended the session (shutdown, a lost unit watch…), if it did. */
  workerError?: SessionError;
  /** The helper's end report, if one came. */
  report?: EndReport;
  /** How systemd saw the unit's main process end, once inactive. */
  exit?: ExitStatus;
  /** The protocol version of the session (1 when absent). */
  version?: number;
  /** Version 2's end record, for EXIT and STOPPED. */
  accounting?: Accounting;
}

export interface LastWrite {
  /** The rest of the frame the helper was writing, so the stream is whole before the last frame. */
  remainder?: Buffer;
  frame?: Frame;
}

/** The reason of an end that reached the unit's end or the helper's report (pure). */
export function endReason(outcome: SessionOutcome): EndReason {
  const { clientGone, workerError, report } = outcome;
  if (clientGone || report?.reason === 'client-gone') return 'client-gone';
  if (workerError) return workerError.wireCode === ErrorCode.SHUTDOWN ? 'shutdown' : 'error';
  if (report?.reason === 'exit') return 'exit';
  if (report?.reason === 'stop') return 'stop';
  return 'error';
}

/** The reason of a start that failed (pure): a shutdown's, the client's going, or an error. */
export function failureReason(outcome: SessionOutcome): EndReason {
  return outcome.workerError?.wireCode === ErrorCode.SHUTDOWN ? 'shutdown' : outcome.clientGone ? 'client-gone' : 'error';
}

/**
 * After the hand-off: without a report nothing may be written (the helper may have died inside an
 * OUTPUT frame, and a frame of ours would land in its payload), nor to a client that is gone.
 */
export function lastWrite(outcome: SessionOutcome): LastWrite {
  const { report } = outcome;
  if (outcome.clientGone || !report || report.reason === 'client-gone') return {};
  const remainder = report.remainder.length > 0 ? report.remainder : undefined;
  const error = (code: number, text: string): LastWrite => ({ remainder, frame: errorFrame(code, text) });
  if (outcome.workerError) return error(outcome.workerError.wireCode, outcome.workerError.message);
  const v2 = (outcome.version ?? 1) >= 2;
  switch (report.reason) {
    case 'exit': {
      if (!outcome.exit) return error(ErrorCode.INTERNAL, 'the session unit ended unobserved');
      const { code, status, result } = outcome.exit;
      if (!v2) return { remainder, frame: { type: 'exit', code, status, result } };
      return { remainder, frame: { type: 'exit', code, status, result, accounting: outcome.accounting ?? UNMEASURED } };
    }
    case 'stop': {
      if (!v2) return { remainder, frame: { type: 'stopped' } };
      // How the program ended once stopped; code 0 when systemd recorded no exit (our own stop collected it).
      const { code, status, result } = outcome.exit ?? { code: 0, status: 0, result: 'stopped' };
      return { remainder, frame: { type: 'stopped', end: { code, status, result, accounting: outcome.accounting ?? UNMEASURED } } };
    }
    case 'flow':
      return error(ErrorCode.FLOW, 'client did not read its output within the write timeout');
    case 'protocol':
      return error(report.code, report.text);
    case 'terminated':
      return error(ErrorCode.INTERNAL, 'session terminated');
    case 'internal':
      return error(ErrorCode.INTERNAL, `session helper failed: ${report.text}`);
  }
}

/**
 * After a start that failed once the unit was asked for, with the unit stopped and the helper's
 * channel read (docs/architecture.md "The token rule"): a helper that named its program may have
 * written, so its report decides as for any end (lastWrite, `outcome.workerError` the failure); one
 * that did not has written nothing, so the failure goes out as an ordinary ERROR.
 */
export function lastWriteAfterFailedLaunch(outcome: SessionOutcome, failure: SessionError, helperNamedProgram: boolean): LastWrite {
  if (helperNamedProgram) return lastWrite(outcome);
  return outcome.clientGone ? {} : { frame: errorFrame(failure.wireCode, failure.message) };
}

/** What decides the last frame once the unit is inactive (session-state.ts holds it). */
export interface FinalFacts extends SessionOutcome {
  /** Where the end was decided: before the unit was asked for, during its start, or after. */
  endedIn?: 'handshake' | 'starting' | 'running';
  /** The start's failure, when it failed. */
  failure?: SessionError;
}

/**
 * The last write and the end's reason (pure), by where the end was decided: before the unit was asked
 * for, the worker holds the client's write side (its ERROR, unless the client is gone); during the
 * start, lastWriteAfterFailedLaunch; after it, lastWrite. `programNamed`: the helper sent its PID.
 */
export function lastWriteFor(facts: FinalFacts, programNamed: boolean): LastWrite & { reason: EndReason } {
  const { failure } = facts;
  if (facts.endedIn === 'handshake' && failure) {
    return { ...(facts.clientGone ? {} : { frame: errorFrame(failure.wireCode, failure.message) }), reason: failureReason(facts) };
  }
  if (facts.endedIn === 'starting' && failure) return { ...lastWriteAfterFailedLaunch(facts, failure, programNamed), reason: failureReason(facts) };
  return { ...lastWrite(facts), reason: endReason(facts) };
}

const UNMEASURED: Accounting = {
  cpuUsageNsec: null,
  memoryBytes: null,
  ioReadBytes: null,
  ioWriteBytes: null,
  tasks: null,
  inputBytes: null,
  outputBytes: null,
  durationUsec: null,
};

/** Writes the frame ahead of queued data and waits, bounded, until the kernel has it. */
export function writeFinalFrame(socket: FdSocket, frame: Frame, timeoutMs: number, before?: Buffer, version = 1): Promise<boolean> {
  if (socket.closed) return Promise.resolve(false);
  if (before) socket.writeUrgent(before);
  socket.writeUrgent(encodeFrame(frame, version));
  return flushed(socket, timeoutMs);
}

/** Resolves true once nothing is queued and nothing failed; false at the deadline, when the socket
 * closes, or when a send failed: one that fails outright empties the queue at once (the peer has
 * closed), and one waiting for room fails with no 'drain' at all. */
export function flushed(socket: FdSocket, timeoutMs: number): Promise<boolean> {
  if (socket.closed || socket.writeFailure) return Promise.resolve(false);
  if (socket.writableLength === 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (sent: boolean) => {
      clearTimeout(timer);
      socket.off('drain', onDrain);
      socket.off('close', onClose);
      socket.off('error', onClose);
      resolve(sent && !socket.writeFailure);
    };
    const onDrain = () => done(true);
    const onClose = () => done(false);
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.on('drain', onDrain);
    socket.on('close', onClose);
    socket.on('error', onClose);
  });
}
