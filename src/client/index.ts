// The client library's public surface: connect, start a session (or list, attach to, stop kept ones), map its end
// to a shell status.
export {
  connect,
  Client,
  type AttachOptions,
  type ConnectOptions,
  type KeptSession,
  type KeptSessionState,
  type KeptSessionOrigin,
  type RequestOptions,
  type StartOptions,
} from './client.ts';
export { Session, type SessionEnd, type SessionEvents, type SessionRole } from './session.ts';
export { ClientError, isClientError, type ClientErrorCode, type WireErrorName } from './client-error.ts';
export { exitStatus } from './exit-status.ts';
export type { SandboxOptions } from './sandbox-options.ts';
export type { Budgets, NetworkMode } from '../protocol/index.ts';
export { DEFAULT_SOCKET, defaultSocketPath } from './default-socket.ts';
