// Why a session ended early: a wire ERROR code and the text the client is sent.
import type { ErrorCodeValue } from './constants.ts';

export class SessionError extends Error {
  constructor(
    readonly wireCode: ErrorCodeValue,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'SessionError';
  }
}
