// The command lines of kept sessions as pure functions: run's --keep DURATION and --label, `ls` and `attach`.
import { defaultSocketPath } from '../client/index.ts';
import { parseSocketValue, parseTimeoutValue, takeOptionValue } from './option-value.ts';

export const KEEP_USAGE = `  opencode-ptyctl ls [--socket PATH] [--json]
  opencode-ptyctl attach [--socket PATH] [--observe | --control] [--from OFFSET|now] [--raw] [--timeout SECONDS] ID

Kept sessions (protocol version 3):
  run --keep DURATION  Keep the session DURATION after this command's connection ends (a number with
                       ms, s, m, h or d; a bare number is seconds): the program runs on, its output goes
                       to a ring (the supervisor's default size), and \`attach\` picks it up. The session id
                       is printed on stderr. With a terminal, the detach key (C-b d) leaves the session
                       running and exits 0; SIGTERM and SIGHUP still stop it.
  run --label TEXT     With --keep: a label \`ls\` shows (at most 256 bytes, no control characters).
  ls                   List kept sessions: id, state, label, program, pid, retained bytes, attached
                       connections (controller+observers), keep deadline. --json: one JSON array.
  attach ID            Attach this terminal to kept session ID: what it retains is replayed, then live
                       output. --observe (the default) watches only; --control takes control (the
                       previous controller becomes an observer) and sizes the terminal. --from OFFSET
                       replays from that output offset, --from now replays nothing (default: all that
                       is retained). The detach key is tmux's: C-b then d (C-b C-b sends one C-b).
                       Exit status: 0 on detach; the program's status if it ends while attached.
                       Only root, and the client service's main process, may list and attach.
                       The session's output is filtered: control strings (OSC such as the clipboard
                       and the title, DCS, APC, PM, SOS) and requests the terminal would answer into
                       this shell (device status, attributes, window reports) are dropped. --raw
                       passes every byte as the program wrote it.
`;

/** tmux's prefix: Ctrl-B. */
export const DETACH_PREFIX = 0x02;
export const DETACH_KEY = 0x64; // 'd'

export interface ListCommand {
  kind: 'ls';
  socket: string;
  json: boolean;
  timeoutMs: number | undefined;
}

export interface AttachCommand {
  kind: 'attach';
  socket: string;
  id: number;
  role: 'control' | 'observe';
  from: number | 'now';
  /** Pass the output unfiltered (terminal-filter.ts drops control strings and report requests otherwise). */
  raw: boolean;
  timeoutMs: number | undefined;
}

export type KeepCommand = ListCommand | AttachCommand | { kind: 'usage'; message: string } | { kind: 'help' };

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
/** keepMs is a u32 on the wire, but no server keeps a session longer than 2^31-1 ms (session.maxKeepMs's
 * bound, src/config/schema.ts: a Node timer's range), so a longer --keep is refused here, not by the server. */
const MAX_KEEP_MS = 0x7fff_ffff;

/** DURATION as milliseconds ("90s", "10m", "1.5h", "2d", "500ms"; a bare number is seconds), or a reason. */
export function parseDuration(value: string): number | string {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(value);
  if (!match) return `--keep needs a duration such as 90s, 10m, 2h or 1d, got ${JSON.stringify(value)}`;
  const ms = Math.round(Number(match[1]) * UNITS[match[2] ?? 's']!);
  if (!(ms >= 1 && ms <= MAX_KEEP_MS)) return `--keep needs a duration from 1 ms to ${MAX_KEEP_MS} ms (about 24.8 days), got ${JSON.stringify(value)}`;
  return ms;
}

/** Milliseconds as the largest whole unit that fits them exactly, as --keep takes it ("10m", "90s", "1500ms"). */
export function durationText(ms: number): string {
  for (const [unit, size] of Object.entries(UNITS).reverse()) if (ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}

/** A label as the protocol takes it: at most 256 bytes of UTF-8 without control characters. */
export function checkLabelText(value: string): string | undefined {
  if (Buffer.byteLength(value, 'utf8') > 256) return '--label takes at most 256 bytes';
  if (/[\u0000-\u001f\u007f-\u009f]/u.test(value)) return '--label may not hold control characters';
  return undefined;
}

/** A session id as `ls` prints it: a decimal integer from 1 to 2^53-1. */
export function parseSessionId(value: string): number | undefined {
  if (!/^[1-9]\d{0,15}$/.test(value)) return undefined;
  const id = Number(value);
  return Number.isSafeInteger(id) ? id : undefined;
}

/** `ls` and `attach`, after the command word. */
export function parseKeepCommand(command: 'ls' | 'attach', args: readonly string[], env: Readonly<Record<string, string | undefined>>): KeepCommand {
  let socket = defaultSocketPath(env);
  let json = false;
  let raw = false;
  let role: 'control' | 'observe' | undefined;
  let from: number | 'now' = 0;
  let timeoutMs: number | undefined;
  const positionals: string[] = [];
  for (let index = 0; index < args.length; index++) {
    const arg = args[index]!;
    if (arg === '-h' || arg === '--help') return { kind: 'help' };
    if (arg === '--') {
      positionals.push(...args.slice(index + 1));
      break;
    }
    if (!arg.startsWith('-') || arg === '-') {
      positionals.push(arg);
      continue;
    }
    const equals = arg.indexOf('=');
    const name = equals > 0 ? arg.slice(0, equals) : arg;
    const flag = (allowed: boolean) => (allowed && equals < 0 ? undefined : usage(`unknown option ${arg}`));
    if (name === '--json' && command === 'ls') {
      const refused = flag(true);
      if (refused) return refused;
      json = true;
      continue;
    }
    if (name === '--raw' && command === 'attach') {
      const refused = flag(true);
      if (refused) return refused;
      raw = true;
      continue;
    }
    if ((name === '--observe' || name === '--control') && command === 'attach') {
      const refused = flag(true);
      if (refused) return refused;
      const wanted = name === '--observe' ? 'observe' : 'control';
      if (role !== undefined && role !== wanted) return usage('--observe and --control exclude each other');
      role = wanted;
      continue;
    }
    if (!['--socket', '--timeout', ...(command === 'attach' ? ['--from'] : [])].includes(name)) return usage(`unknown option ${arg}`);
    const taken = takeOptionValue(args, index, name, arg);
    if ('message' in taken) return usage(taken.message);
    const { value } = taken;
    index = taken.index;
    if (name === '--socket') {
      const path = parseSocketValue(value);
      if (typeof path !== 'string') return usage(path.message);
      socket = path;
    } else if (name === '--timeout') {
      const ms = parseTimeoutValue(value);
      if (typeof ms !== 'number') return usage(ms.message);
      timeoutMs = ms;
    } else {
      const offset = /^\d{1,16}$/.test(value) ? Number(value) : NaN;
      if (value === 'now') from = 'now';
      else if (Number.isSafeInteger(offset)) from = offset;
      else return usage(`--from needs an output offset (0 to 2^53-1) or now, got ${JSON.stringify(value)}`);
    }
  }
  if (command === 'ls') {
    if (positionals.length > 0) return usage(`ls takes no arguments, got ${JSON.stringify(positionals[0])}`);
    return { kind: 'ls', socket, json, timeoutMs };
  }
  if (positionals.length !== 1) return usage(positionals.length === 0 ? 'attach needs a session ID (see ls)' : 'attach takes one session ID');
  const id = parseSessionId(positionals[0]!);
  if (id === undefined) return usage(`a session ID is a decimal number from 1 to 2^53-1, got ${JSON.stringify(positionals[0])}`);
  // The operator's attach watches unless control is asked for (docs/protocol.md "Principals").
  return { kind: 'attach', socket, id, role: role ?? 'observe', from, raw, timeoutMs };
}

function usage(message: string): { kind: 'usage'; message: string } {
  return { kind: 'usage', message };
}
