// opencode's `#pty` backend (the module its server imports as `#pty`) on the supervisor: every terminal in its
// own systemd unit as the server's user, ended with all its processes, surviving nothing of the server's.
// opencode calls spawn(command, args, { name, cwd, env }) and uses pid, onData, onExit, write, resize, kill.
export { spawn } from 'opencode-pty-supervisor/node-pty';
export type { IDisposable, IExitEvent, IPty, IPtyForkOptions } from 'opencode-pty-supervisor/node-pty';
