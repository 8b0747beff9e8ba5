// What to do when the supervisor's socket cannot be connected, by errno: the usual causes on a host
// where it is installed (docs/operations.md, "The agent unit").
const HINTS: Record<string, string> = {
  EACCES:
    "only the agent's service unit may connect: its processes get the socket's group (opencode-pty unless " +
    'install was given --socket-group) from the drop-in `opencode-ptyctl install` wrote for --client-unit. Run this ' +
    'from inside that unit; an agent that was running at install has the group only after a restart ' +
    '(systemctl restart UNIT; its MainPID\'s "Groups:" in /proc/PID/status shows it)',
  ENOENT: 'no supervisor socket there: is it installed and its socket unit started? (`opencode-ptyctl status`)',
  ECONNREFUSED: 'nothing listens on the socket: start it (systemctl start opencode-pty-supervisor.socket; `opencode-ptyctl status`)',
};

/** A hint for a failed connect's errno, or undefined when there is nothing useful to add. */
export function connectHint(errno: string | undefined): string | undefined {
  return errno === undefined ? undefined : HINTS[errno];
}
