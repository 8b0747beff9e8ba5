// The CLI's command line as a pure function: arguments and environment in, a command or a usage error out.
import { DEFAULT_SOCKET, defaultSocketPath } from '../client/index.ts';
import { parseSocketValue, parseTimeoutValue, takeOptionValue } from './option-value.ts';
import { KEEP_USAGE, checkLabelText, parseDuration, parseKeepCommand, type KeepCommand } from './keep-args.ts';
import { SANDBOX_OPTIONS, SANDBOX_USAGE, applySandboxOption, sandboxStartOptions, type SandboxArgs, type SandboxOption } from './sandbox-args.ts';

export { DEFAULT_SOCKET };

/** Exit status for a command line we cannot understand (as getopt-style tools do). */
export const USAGE_EXIT = 2;
/** Exit status when the supervisor could not run the program or the connection failed (as `env` and
 * container runners use 125 for "the runner itself failed"). */
export const FAILURE_EXIT = 125;

export const USAGE = `Usage:
  opencode-ptyctl run [--socket PATH] [--cwd DIR] [--env NAME=VALUE]... [--timeout SECONDS]
                   [--rows N] [--cols N] [--resize-fd FD] [--keep DURATION [--label TEXT]]
                   [--profile NAME] [--network MODE] [--max-time DURATION] [--max-memory SIZE]
                   [--max-tasks N] [--max-cpu PERCENT] [--] COMMAND [ARG]...
${KEEP_USAGE.split('\n\n')[0]}
  opencode-ptyctl --help
  opencode-ptyctl --version

Commands:
  run        Run COMMAND in a terminal session of the opencode-pty supervisor and relay it to this
             terminal. When standard input is a terminal it is put in raw mode (and restored on every
             exit), and window size changes are forwarded; otherwise standard input is passed through
             as input until it ends. Standard output carries only the session's output.
             The session always has a terminal: piped input is echoed into the output, read line by
             line (a line is cut at 4095 bytes) and its control bytes act (^C interrupts, ^D ends a
             line or the input, ^? and ^U edit, ^S stops output, CR becomes LF); output has CRLF
             line ends. Pass data that must arrive byte for byte through a file instead.

Options of run:
  --socket PATH      The supervisor's socket (default: $OPENCODE_PTY_SOCKET, else ${DEFAULT_SOCKET}).
  --cwd DIR          Directory to run in (default: the current one). It is opened here and handed over,
                     so the session runs exactly where this process could go.
  --env NAME=VALUE   Set a variable for the program (repeatable). Only TERM is taken from this
                     process's environment. What reaches the program is the supervisor's policy
                     (session.environmentPolicy): by default (pass) every variable given here but
                     the ones systemd sets for a unit (LISTEN_*, NOTIFY_SOCKET, ...) and the
                     operator's environmentDeny; with allowlist (always in the hardened profile),
                     only environmentAllowlist.
  --timeout SECONDS  Give up (status ${FAILURE_EXIT}) when the supervisor has not started the session within this
                     many seconds (default 30; 0: wait as long as it takes).
  --rows N, --cols N The terminal's size at start (1..65535). Default: the size of this process's
                     terminal (stdout, else stderr), else 24 rows by 80 columns.
  --resize-fd FD     Read window sizes from file descriptor FD (3 or above: a pipe this command
                     inherits), one line "ROWS COLS" each, as \`stty size\` prints them; each line
                     resizes the session's terminal. A malformed line is reported on stderr and
                     skipped; the end of FD changes nothing. For callers without a terminal.
  --                 End of options: everything after it is COMMAND and its arguments.
  -h, --help         Show this help.
  --version          Print the version of this command and exit.

${KEEP_USAGE.split('\n\n').slice(1).join('\n\n')}
${SANDBOX_USAGE}
Signals: SIGINT and SIGQUIT are forwarded to the session; SIGTERM and SIGHUP stop it.

Exit status: COMMAND's own status, or 128+N when it was killed by signal N (as a shell reports it);
124 when the session ran out of its --max-time; 128+N also when this command was ended by signal N; ${FAILURE_EXIT} when the supervisor refused or failed the
session or the connection broke; ${USAGE_EXIT} for a command line error.
`;

export interface RunCommand {
  kind: 'run';
  socket: string;
  /** Undefined: the current directory. */
  cwd: string | undefined;
  env: Record<string, string>;
  argv: string[];
  /** Deadline for connect and for STARTED, each; undefined: the library's default. */
  timeoutMs: number | undefined;
  /** The terminal's size at start; undefined: measured (terminal.ts). */
  rows: number | undefined;
  cols: number | undefined;
  /** An inherited fd to read "ROWS COLS" lines from (resize-lines.ts). */
  resizeFd: number | undefined;
  /** --keep DURATION (and --label): present only when given. */
  keep?: { keepMs: number; label: string };
  /** --profile, --network and the --max-* budgets: present only when given (sandbox-args.ts). */
  sandbox?: ReturnType<typeof sandboxStartOptions>;
}

const VALUE_OPTIONS = new Set<string>(['--socket', '--cwd', '--env', '--timeout', '--rows', '--cols', '--resize-fd', '--keep', '--label', ...SANDBOX_OPTIONS]);
/** Sizes as the protocol carries them (docs/protocol.md, START and RESIZE: u16, not 0). */
const SIZE_MAX = 0xffff;

export type CliCommand = RunCommand | KeepCommand | { kind: 'help' } | { kind: 'version' } | { kind: 'usage'; message: string };

/** Parses `args` (without node and the script); `env` supplies OPENCODE_PTY_SOCKET and TERM. */
export function parseCommandLine(args: readonly string[], env: Readonly<Record<string, string | undefined>>): CliCommand {
  const [command, ...rest] = args;
  if (command === undefined) return usage('missing command');
  if (command === '-h' || command === '--help' || command === 'help') return { kind: 'help' };
  if (command === '--version' || command === '-V') return { kind: 'version' };
  if (command === 'ls' || command === 'attach') return parseKeepCommand(command, rest, env);
  if (command !== 'run') return usage(`unknown command ${JSON.stringify(command)}`);
  return parseRun(rest, env);
}

function parseRun(args: readonly string[], env: Readonly<Record<string, string | undefined>>): CliCommand {
  let socket = defaultSocketPath(env);
  let cwd: string | undefined;
  let timeoutMs: number | undefined;
  let rows: number | undefined;
  let cols: number | undefined;
  let resizeFd: number | undefined;
  let keepMs: number | undefined;
  let label: string | undefined;
  const sandbox: SandboxArgs = { budgets: {} };
  const sessionEnv: Record<string, string> = {};
  if (env.TERM !== undefined && env.TERM !== '') sessionEnv.TERM = env.TERM;
  let index = 0;
  for (; index < args.length; index++) {
    const arg = args[index]!;
    if (arg === '--') {
      index++;
      break;
    }
    // The first word that is not an option starts COMMAND: its own options are not ours.
    if (!arg.startsWith('-') || arg === '-') break;
    if (arg === '-h' || arg === '--help') return { kind: 'help' };
    const equals = arg.indexOf('=');
    const name = equals > 0 && arg.startsWith('--') ? arg.slice(0, equals) : arg;
    if (!VALUE_OPTIONS.has(name)) return usage(`unknown option ${arg}`);
    const taken = takeOptionValue(args, index, name, arg);
    if ('message' in taken) return usage(taken.message);
    const { value } = taken;
    index = taken.index;
    if ((SANDBOX_OPTIONS as readonly string[]).includes(name)) {
      const refused = applySandboxOption(sandbox, name as SandboxOption, value);
      if (refused !== undefined) return usage(refused);
    } else if (name === '--socket') {
      const path = parseSocketValue(value);
      if (typeof path !== 'string') return usage(path.message);
      socket = path;
    } else if (name === '--cwd') {
      if (value === '') return usage('--cwd needs a directory');
      cwd = value;
    } else if (name === '--timeout') {
      const ms = parseTimeoutValue(value);
      if (typeof ms !== 'number') return usage(ms.message);
      timeoutMs = ms;
    } else if (name === '--rows' || name === '--cols') {
      const size = wholeNumber(value);
      if (!(size >= 1 && size <= SIZE_MAX)) return usage(`${name} needs a whole number from 1 to ${SIZE_MAX}, got ${JSON.stringify(value)}`);
      if (name === '--rows') rows = size;
      else cols = size;
    } else if (name === '--keep') {
      const ms = parseDuration(value);
      if (typeof ms === 'string') return usage(ms);
      keepMs = ms;
    } else if (name === '--label') {
      const refused = checkLabelText(value);
      if (refused !== undefined) return usage(refused);
      label = value;
    } else if (name === '--resize-fd') {
      const fd = wholeNumber(value);
      // 0-2 are the session's own input and output.
      if (!(fd >= 3 && fd <= 0x7fffffff)) return usage(`--resize-fd needs a file descriptor number of 3 or above, got ${JSON.stringify(value)}`);
      resizeFd = fd;
    } else {
      const split = value.indexOf('=');
      if (split <= 0) return usage(`--env needs NAME=VALUE, got ${JSON.stringify(value)}`);
      sessionEnv[value.slice(0, split)] = value.slice(split + 1);
    }
  }
  const argv = args.slice(index);
  if (argv.length === 0) return usage('missing COMMAND to run');
  if (label !== undefined && keepMs === undefined) return usage('--label names a kept session: give --keep DURATION too');
  const keep = keepMs === undefined ? {} : { keep: { keepMs, label: label ?? '' } };
  const asked = sandboxStartOptions(sandbox);
  const limits = Object.keys(asked).length === 0 ? {} : { sandbox: asked };
  return { kind: 'run', socket, cwd, env: sessionEnv, argv, timeoutMs, rows, cols, resizeFd, ...keep, ...limits };
}

function wholeNumber(value: string): number {
  return /^\d{1,10}$/.test(value) ? Number(value) : NaN;
}

function usage(message: string): CliCommand {
  return { kind: 'usage', message };
}
