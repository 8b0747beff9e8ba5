// The one line a node-pty caller sees when the supervisor refused or failed its session: node-pty prints
// its own chdir/execvp failures into the terminal ("chdir(2) failed.: No such file or directory", CRLF)
// before onExit, and callers that never listen to 'error' (opencode's terminal service) show only onData.
import { ClientError } from '../client-error.ts';

/** Longest reason shown; the rest is cut (a server's message is bounded, a local error's text is not). */
const MAX_REASON = 300;

/** The reason as one terminal line: `opencode-pty: <reason>` with CRLF, control characters made spaces. */
export function failureLine(error: unknown): string {
  const reason = error instanceof ClientError || error instanceof Error ? error.message : String(error);
  // eslint-disable-next-line no-control-regex
  const flat = reason.replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' ').trim().slice(0, MAX_REASON);
  return `opencode-pty: ${flat || 'the session could not start'}\r\n`;
}
