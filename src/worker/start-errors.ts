// How a failure before the hand-off becomes the client's ERROR, and reads raced against an abort.
import { isPeerGone } from '../io/index.ts';
import { ErrorCode, SessionError } from '../protocol/index.ts';

/** A promise raced against an abort: its later rejection (a read ended by our close) is expected. */
export function settled<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined);
  return promise;
}

/**
 * A read raced against an abort. A read that completes after losing the race still hands over what
 * it read (a START's directory fd): `discard` gets it, so a worker that serves sessions in a row does
 * not keep one client fd per aborted session (a hang-up seen in the same wakeup as START's bytes).
 */
export async function raceAbort<T>(read: Promise<T>, aborted: Promise<never>, discard: (late: T) => void): Promise<T> {
  try {
    return await Promise.race([settled(read), aborted]);
  } catch (error) {
    read.then(discard, () => undefined);
    throw error;
  }
}

/** A start's failure as the client's ERROR; what caused it stays its `cause` (the journal line names it, end-report.ts). */
export function asSessionError(error: unknown): SessionError {
  if (error instanceof SessionError) return error;
  const code = (error as { code?: string })?.code;
  const message = (error as Error)?.message ?? String(error);
  if (isPeerGone(error)) return new SessionError(ErrorCode.PROTOCOL, 'client closed before START', { cause: error });
  if (code === 'UNIT_START_FAILED' || code === 'DBUS_ERROR' || code === 'DBUS_TIMEOUT') {
    return new SessionError(ErrorCode.START_FAILED, `session unit could not be started: ${message}`, { cause: error });
  }
  return new SessionError(ErrorCode.INTERNAL, `session failed: ${message}`, { cause: error });
}
