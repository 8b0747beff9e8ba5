// The one error class of the codec: a stable `code` to branch on, and the ERROR code to send the peer.
import { ErrorCode } from './constants.ts';

/** Stable reasons a frame is refused; callers branch on these, never on the message text. */
export type ProtocolErrorCode =
  | 'UNKNOWN_TYPE' // the type byte names no frame
  | 'WRONG_DIRECTION' // a frame this peer may not send (e.g. OUTPUT from a client)
  | 'OVERSIZE' // a length beyond its limit: frame payload, IO payload, string, unit name, result
  | 'BAD_LENGTH' // a payload shorter or longer than its layout, or a length prefix past the end
  | 'BAD_UTF8' // text that is not strict UTF-8, or a string the encoder cannot represent exactly
  | 'BAD_VALUE' // a field outside its range (rows 0, signal 65, wrong magic, NUL in a string, …)
  | 'TOO_MANY'; // more argv or env entries than the limits allow

export class ProtocolError extends Error {
  override name = 'ProtocolError';
  readonly code: ProtocolErrorCode;
  /** The ErrorCode an ERROR frame reporting this carries: PROTOCOL, or BAD_START for a bad START body. */
  readonly wireCode: number;

  constructor(code: ProtocolErrorCode, message: string, wireCode: number = ErrorCode.PROTOCOL) {
    super(message);
    this.code = code;
    this.wireCode = wireCode;
  }
}

export function isProtocolError(value: unknown): value is ProtocolError {
  return value instanceof ProtocolError;
}
