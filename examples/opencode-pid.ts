// `pid` with this backend: 0 at spawn (the session starts asynchronously; a pid known at spawn would need a
// blocking call), the program's own PID once the session has started. opencode's terminal service copies
// `pty.pid` once at spawn, so it keeps 0 for the terminal's whole life. The one-line change it would need,
// in node-pty's own surface (the same with node-pty and bun-pty, whose pid is set at spawn):
import { spawn, type IPty } from 'opencode-pty-supervisor/node-pty';

export function open(command: string, args: string[], cwd: string): { proc: IPty; info: { pid: number } } {
  const proc = spawn(command, args, { name: 'xterm-256color', cwd, env: process.env });
  const info = { pid: proc.pid }; // what a copy at spawn gets: 0 here
  // The one line: read pid again once the program has started (its first output is after that).
  const first = proc.onData(() => ((info.pid = proc.pid), first.dispose()));
  // Or, with this module only, as soon as the session has started (before any output):
  proc.onStart(({ pid }) => (info.pid = pid));
  return { proc, info };
}
