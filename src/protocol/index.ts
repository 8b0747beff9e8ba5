// The public surface of the wire protocol codec (docs/protocol.md).
export * from './constants.ts';
export {
  ACCOUNTING_FIELDS,
  BUDGET_FIELDS,
  NETWORK_MODES,
  type Budgets,
  type NetworkMode,
  Role,
  SessionState,
  SessionOrigin,
  type RoleCode,
  type SessionEntry,
  type SessionOriginCode,
  type SessionStateCode,
  type Accounting, type Direction, type EnvEntry, type Frame, type FrameName, type FrameOf, type ProgramEnd } from './frames.ts';
export { ProtocolError, isProtocolError, type ProtocolErrorCode } from './errors.ts';
export { LAYOUT, layoutOf, parseHeader, typeCodeOf, type FrameLayout } from './layout.ts';
export { FrameDecoder, parsePayload } from './decode.ts';
export { MAX_ERROR_TEXT, encodeFrame, errorFrame } from './encode.ts';
export { SessionError } from './session-error.ts';
export { checkEnvUnique, checkLabel, utf8 } from './rules.ts';
export { SendWindow } from './credit.ts';
export { cutText, sessionsFrame } from './encode-keep.ts';
export { checkBudget, checkProfileName, MAX_BUDGET } from './start-sandbox.ts';
