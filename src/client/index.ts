// The client library's public surface: connect, start a session, map its end to a shell status.
export { connect, Client, type ConnectOptions, type StartOptions } from './client.ts';
export { Session, type SessionEnd } from './session.ts';
export { ClientError, isClientError, type ClientErrorCode, type WireErrorName } from './client-error.ts';
export { exitStatus } from './exit-status.ts';
export { DEFAULT_SOCKET, defaultSocketPath } from './default-socket.ts';
