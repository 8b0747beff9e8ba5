// The one error class of the fd socket layer: a stable `code` to branch on, the errno beside it when a syscall failed.

export type IoErrorCode =
  /** The peer closed before the bytes asked for arrived. */
  | 'EOF'
  /** The socket was closed locally while the operation was pending. */
  | 'CLOSED'
  /** Descriptors arrived where none are allowed; they were closed. */
  | 'UNEXPECTED_FD'
  /** A control message other than SCM_RIGHTS arrived where none is allowed. */
  | 'UNEXPECTED_CONTROL'
  /** Another read is already in progress on this socket. */
  | 'BUSY'
  /** write() would queue more than the socket's bound. */
  | 'QUEUE_FULL'
  /** The peer is gone: EPIPE, ECONNRESET, or POLLERR on the socket. */
  | 'PEER_GONE'
  /** Any other failed syscall; `errno` says which. */
  | 'SYSCALL';

export class IoError extends Error {
  readonly code: IoErrorCode;
  /** Node-style errno name ('EPIPE'…) when a syscall failed. */
  readonly errno: string | undefined;
  readonly syscall: string | undefined;

  constructor(code: IoErrorCode, message: string, options: { errno?: string; syscall?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'IoError';
    this.code = code;
    this.errno = options.errno;
    this.syscall = options.syscall;
  }
}

const PEER_GONE_ERRNOS = new Set(['EPIPE', 'ECONNRESET', 'ENOTCONN']);

/** Wraps an error thrown by the native addon (which carries `code`, `syscall` like Node's own). */
export function fromSystemError(error: unknown, operation: string): IoError {
  const errno = typeof (error as { code?: unknown })?.code === 'string' ? (error as { code: string }).code : undefined;
  const syscall =
    typeof (error as { syscall?: unknown })?.syscall === 'string' ? (error as { syscall: string }).syscall : operation;
  const code: IoErrorCode = errno !== undefined && PEER_GONE_ERRNOS.has(errno) ? 'PEER_GONE' : 'SYSCALL';
  return new IoError(code, `${operation} failed: ${errno ?? String(error)}`, { errno, syscall, cause: error });
}

/** Codes that say the peer went away (our IoError codes, and a Node socket's errno codes): an end, not a fault. */
const PEER_GONE_CODES = new Set(['EOF', 'CLOSED', 'PEER_GONE', 'ECONNRESET', 'EPIPE']);

/** Whether `error` says the peer went away; the one list every side branches on. */
export function isPeerGone(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && PEER_GONE_CODES.has(code);
}
