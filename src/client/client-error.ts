// The one error class of the client: a stable `code` to branch on, the wire ERROR code when the server sent it.
import { ErrorCode } from '../protocol/index.ts';

/** Names of the wire ERROR codes, as the server's ERROR frame carries them. */
export type WireErrorName = keyof typeof ErrorCode;

export type ClientErrorCode =
  /** The server sent ERROR with this code (`remote` is true, `wireCode` holds the number); PROTOCOL and FLOW
   * are also used, with `remote` false, when the server broke the protocol or overran our window. */
  | WireErrorName
  /** The server sent an ERROR code this client does not know. */
  | 'UNKNOWN'
  /** The socket could not be connected (`errno` says why). */
  | 'CONNECT'
  /** The socket's server is not root's (the message names its uid): nothing was sent to it. */
  | 'SERVER_UID'
  /** The server closed or vanished before the session ended. */
  | 'HANGUP'
  /** The working directory could not be opened as a directory (`errno` says why). */
  | 'CWD'
  /** A resize or signal value out of range (checked before anything is sent). */
  | 'INVALID_ARGUMENT'
  /** The server's protocol version lacks what was asked (keepMs, list(), attach() need version 3). */
  | 'UNSUPPORTED'
  /** The call does not fit the connection's state (start twice, start after an error…). */
  | 'STATE'
  /** No answer within the client's deadline (connect's or start's `timeoutMs`). */
  | 'TIMEOUT'
  /** More input written before the session started than the client holds. */
  | 'QUEUE_FULL'
  /** Closed locally while waiting. */
  | 'CLOSED'
  /** The caller's AbortSignal fired. */
  | 'ABORTED'
  /** Any other socket failure (`errno` says which). */
  | 'IO';

const NAME_OF_WIRE = new Map<number, WireErrorName>(
  Object.entries(ErrorCode).map(([name, code]) => [code, name as WireErrorName]),
);

export class ClientError extends Error {
  readonly code: ClientErrorCode;
  /** The ERROR frame's number when the server sent one. */
  readonly wireCode: number | undefined;
  /** True when the server reported this error; false when the client detected it. */
  readonly remote: boolean;
  readonly errno: string | undefined;

  constructor(
    code: ClientErrorCode,
    message: string,
    options: { wireCode?: number; errno?: string; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ClientError';
    this.code = code;
    this.wireCode = options.wireCode;
    this.remote = options.wireCode !== undefined;
    this.errno = options.errno;
  }

  /** The error an ERROR frame reports: its code's name and the server's own text. */
  static fromWire(wireCode: number, text: string): ClientError {
    return new ClientError(NAME_OF_WIRE.get(wireCode) ?? 'UNKNOWN', text, { wireCode });
  }
}

export function isClientError(value: unknown): value is ClientError {
  return value instanceof ClientError;
}

/** ABORTED, when the caller's signal has fired already. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new ClientError('ABORTED', 'aborted by the caller', { cause: signal.reason });
}
