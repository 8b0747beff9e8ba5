// Where the supervisor listens unless told otherwise: the installed socket, or $OPENCODE_PTY_SOCKET.

/** The installed supervisor's socket (units/supervisor.socket, ListenStream=). */
export const DEFAULT_SOCKET = '/run/opencode-pty/supervisor.sock';

/** The socket to use when the caller names none: $OPENCODE_PTY_SOCKET when set and not empty, else DEFAULT_SOCKET. */
export function defaultSocketPath(env: Readonly<Record<string, string | undefined>>): string {
  return env.OPENCODE_PTY_SOCKET || DEFAULT_SOCKET;
}
