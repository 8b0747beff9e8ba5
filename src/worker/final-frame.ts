// A session's end on the wire: what the worker writes once the unit is inactive (pure decision), and
// the bounded write of it ahead of anything queued.
import type { FdSocket } from '../io/fd-socket.ts';
import { ErrorCode, encodeFrame, errorFrame, type Frame } from '../protocol/index.ts';
import type { SessionError } from '../protocol/session-error.ts';
import type { EndReport } from '../control/helper-channel.ts';
import type { ExitStatus } from '../systemd/unit-watch.ts';

export interface SessionOutcome {
  /** The client closed or reset its connection: it is sent nothing. */
  clientGone: boolean;
  /** Why the worker itself ended the session (shutdown, a lost unit watch…), if it did. */
  workerError?: SessionError;
  /** The helper's end report, if one came. */
  report?: EndReport;
  /** How systemd saw the unit's main process end, once inactive. */
  exit?: ExitStatus;
}

export interface LastWrite {
  /** The rest of the frame the helper was writing, so the stream is whole before the last frame. */
  remainder?: Buffer;
  frame?: Frame;
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
  switch (report.reason) {
    case 'exit':
      if (!outcome.exit) return error(ErrorCode.INTERNAL, 'the session unit ended unobserved');
      return { remainder, frame: { type: 'exit', code: outcome.exit.code, status: outcome.exit.status, result: outcome.exit.result } };
    case 'stop':
      return { remainder, frame: { type: 'stopped' } };
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

/** Writes the frame ahead of queued data and waits, bounded, until the kernel has it. */
export function writeFinalFrame(socket: FdSocket, frame: Frame, timeoutMs: number, before?: Buffer): Promise<boolean> {
  if (socket.closed) return Promise.resolve(false);
  if (before) socket.writeUrgent(before);
  socket.writeUrgent(encodeFrame(frame));
  return flushed(socket, timeoutMs);
}

/** Resolves true once nothing is queued, false at the deadline or when the socket closes. */
export function flushed(socket: FdSocket, timeoutMs: number): Promise<boolean> {
  if (socket.closed) return Promise.resolve(false);
  if (socket.writableLength === 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (sent: boolean) => {
      clearTimeout(timer);
      socket.off('drain', onDrain);
      socket.off('close', onClose);
      resolve(sent);
    };
    const onDrain = () => done(true);
    const onClose = () => done(false);
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.on('drain', onDrain);
    socket.on('close', onClose);
  });
}
