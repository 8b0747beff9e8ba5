// The one error class of the systemd side: callers branch on `code`, never on the message.
import { constants as osConstants } from 'node:os';

export type SystemdErrorCode =
  /** No bus connection could be made (socket missing, authentication refused…). */
  | 'DBUS_CONNECT_FAILED'
  /** The bus did not agree to pass file descriptors; a call carrying one would hang forever. */
  | 'DBUS_NO_FD_PASSING'
  /** A call got no reply within its deadline. */
  | 'DBUS_TIMEOUT'
  /** The connection closed (or was closed) before the reply arrived. */
  | 'DBUS_CLOSED'
  /** The peer answered with a D-Bus error; `dbusName` holds its name. */
  | 'DBUS_ERROR'
  /** A unit property outside the allowlist was asked for. */
  | 'PROPERTY_NOT_ALLOWED'
  /** A unit property value of the wrong type or out of range. */
  | 'PROPERTY_INVALID'
  /** A unit name, prefix or pattern systemd would refuse or misread. */
  | 'INVALID_UNIT_NAME'
  /** The start job did not finish with result "done" (or StartTransientUnit was refused). */
  | 'UNIT_START_FAILED'
  /** The unit is not loaded. */
  | 'NO_SUCH_UNIT'
  /** A unit did not reach the awaited state within the deadline. */
  | 'UNIT_WAIT_TIMEOUT'
  /** NOTIFY_SOCKET is malformed. */
  | 'NOTIFY_INVALID';

export interface SystemdErrorDetails {
  /** The D-Bus error name, e.g. "org.freedesktop.systemd1.NoSuchUnit". */
  dbusName?: string;
  /** The result of a failed job: "failed", "timeout", "dependency"… */
  jobResult?: string;
  /** How the main process ended, when a failed start left that behind. */
  exit?: { code: number; status: number; result: string };
  unit?: string;
  cause?: unknown;
}

export class SystemdError extends Error {
  readonly code: SystemdErrorCode;
  readonly dbusName: string | undefined;
  readonly jobResult: string | undefined;
  readonly exit: { code: number; status: number; result: string } | undefined;
  readonly unit: string | undefined;

  constructor(code: SystemdErrorCode, message: string, details: SystemdErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'SystemdError';
    this.code = code;
    this.dbusName = details.dbusName;
    this.jobResult = details.jobResult;
    this.exit = details.exit;
    this.unit = details.unit;
  }
}

/** D-Bus error names we branch on. */
export const DbusErrorName = {
  NO_SUCH_UNIT: 'org.freedesktop.systemd1.NoSuchUnit',
  UNKNOWN_OBJECT: 'org.freedesktop.DBus.Error.UnknownObject',
  UNIT_EXISTS: 'org.freedesktop.systemd1.UnitExists',
  SERVICE_UNKNOWN: 'org.freedesktop.DBus.Error.ServiceUnknown',
  NAME_HAS_NO_OWNER: 'org.freedesktop.DBus.Error.NameHasNoOwner',
} as const;

/**
 * True when the bus says systemd is not on it: a connection made while the bus restarts can reach the
 * old daemon after PID 1 has left it (or the new one before PID 1 is back). That connection is no
 * use, but says nothing about any unit.
 */
export function isSystemdAbsent(error: unknown): boolean {
  return (
    error instanceof SystemdError &&
    error.code === 'DBUS_ERROR' &&
    (error.dbusName === DbusErrorName.SERVICE_UNKNOWN || error.dbusName === DbusErrorName.NAME_HAS_NO_OWNER)
  );
}

/** True when the error says the unit is not loaded (by name or by object path). */
export function isUnitGone(error: unknown): boolean {
  return (
    error instanceof SystemdError &&
    error.code === 'DBUS_ERROR' &&
    (error.dbusName === DbusErrorName.NO_SUCH_UNIT || error.dbusName === DbusErrorName.UNKNOWN_OBJECT)
  );
}

/** Awaits an optional step whose D-Bus error only means "nothing to do" (unit gone, not referenced…). */
export async function ignoreDbusError(step: Promise<unknown>): Promise<void> {
  try {
    await step;
  } catch (error) {
    if (!(error instanceof SystemdError) || error.code !== 'DBUS_ERROR') throw error;
  }
}

/** A signal by name or number as KillUnit takes it; anything else is refused before it reaches the bus. */
export function signalNumber(signal: number | NodeJS.Signals): number {
  const value = typeof signal === 'number' ? signal : osConstants.signals[signal];
  if (!Number.isInteger(value) || value <= 0 || value > 64) throw new SystemdError('PROPERTY_INVALID', `not a signal: ${signal}`);
  return value;
}
