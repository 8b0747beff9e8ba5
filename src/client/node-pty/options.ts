// node-pty's spawn options checked and resolved into a START: what applies is taken, what cannot apply is refused.
import { defaultSocketPath } from '../default-socket.ts';
import { ClientError } from '../client-error.ts';
import type { Budgets, NetworkMode } from '../../protocol/index.ts';
import { checkSandboxOptions } from '../sandbox-options.ts';

/** The options node-pty's `spawn` takes that mean something here (node-pty's IPtyForkOptions). */
export interface IPtyForkOptions {
  /** TERM for the program (default 'xterm', as node-pty). */
  name?: string;
  cols?: number;
  rows?: number;
  /** Opened here as a directory and handed over (default: process.cwd()). One that cannot be opened
   * fails the session visibly (a reason line, then onExit), as node-pty's chdir failure does. */
  cwd?: string;
  /** true: a `cwd` that is not a directory (gone since) is replaced by the program's $HOME (else the
   * caller's home), as opencode's own default does. Off by default: a program would run where the
   * caller did not ask. */
  cwdFallbackToHome?: boolean;
  /** The program's environment (default: process.env); the supervisor filters it (docs/configuration.md). */
  env?: Record<string, string | undefined>;
  /** 'utf8' (default): onData gets strings, decoded across chunk boundaries. null: Buffers. */
  encoding?: string | null;
  /** node-pty's XON/XOFF interception: only false is accepted (use pause()/resume()). */
  handleFlowControl?: boolean;
  /** The supervisor's socket (default: $OPENCODE_PTY_SOCKET, else the system one). */
  socketPath?: string;
  /** Deadline for the supervisor to start the session, ms (default 30 s; 0: none). */
  timeoutMs?: number;
  /** Keep the session this many ms after its connection ends (protocol version 3; 0, the default: it ends with
   * the connection). The IPty's `id` then names it for attach(). */
  keepMs?: number;
  /** With keepMs: bytes of output retained for attach() (4096 to 64 MiB; default the server's). */
  retainBytes?: number;
  /** With keepMs: a label that listing shows (plain text, at most 256 bytes). */
  label?: string;
  /** Protocol version 4: the session's profile (default: the supervisor's floor); see docs/client.md. */
  profile?: string;
  /** Protocol version 4: 'off', 'host-loopback' or 'on' (default: the supervisor's default). */
  network?: NetworkMode;
  /** Protocol version 4: wall clock (ms), memory (bytes), tasks, CPU (% of one CPU), each a positive integer. */
  budgets?: Budgets;
}

/** attach()'s options: opencode's `attach(id, { cursor })`, and what a terminal needs besides. */
export interface IPtyAttachOptions {
  /** The output offset to replay from: -1 for "from now" (no replay), 0 (default) for all that is retained. */
  cursor?: number;
  /** 'control' (default): this IPty types and sizes the terminal; 'observe': output only (write throws). */
  role?: 'control' | 'observe';
  cols?: number;
  rows?: number;
  encoding?: string | null;
  socketPath?: string;
  timeoutMs?: number;
}

export interface ResolvedOptions {
  argv: string[];
  term: string;
  cols: number;
  rows: number;
  cwd: string;
  cwdFallbackToHome: boolean;
  env: Record<string, string>;
  encoding: 'utf8' | null;
  socketPath: string;
  timeoutMs: number | undefined;
  keepMs: number;
  retainBytes: number;
  label: string;
  /** START's version 4 fields, only those given (sandbox-options.ts). */
  sandbox: ReturnType<typeof checkSandboxOptions>;
  /** Set for attach(): the kept session to attach to instead of starting one. */
  attach?: { id: number; from: number | 'now'; role: 'control' | 'observe' };
}

const ACCEPTED = new Set(['name', 'cols', 'rows', 'cwd', 'env', 'encoding', 'handleFlowControl', 'socketPath', 'timeoutMs', 'cwdFallbackToHome', 'keepMs', 'retainBytes', 'label', 'profile', 'network', 'budgets']);
const ATTACH_ACCEPTED = new Set(['cursor', 'role', 'cols', 'rows', 'encoding', 'socketPath', 'timeoutMs']);

/** node-pty options that cannot apply to a session the supervisor runs, and why. */
const REFUSED: Record<string, string> = {
  uid: 'a session runs as the calling service\'s own user, decided by the supervisor',
  gid: 'a session runs with the calling service\'s own group, decided by the supervisor',
  flowControlPause: 'flow control is pause()/resume() (credit on the connection), not XOFF in the data',
  flowControlResume: 'flow control is pause()/resume() (credit on the connection), not XON in the data',
  useConpty: 'a Windows option',
  useConptyDll: 'a Windows option',
  conptyInheritCursor: 'a Windows option',
  experimentalUseConpty: 'a Windows option',
};

const DEFAULT_COLS = 80;
const DEFAULT_ROWS = 24;

function invalid(message: string): ClientError {
  return new ClientError('INVALID_ARGUMENT', message);
}

export function checkSize(cols: unknown, rows: unknown): { cols: number; rows: number } {
  for (const [name, value] of [['cols', cols], ['rows', rows]] as const) {
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 0xffff) {
      throw invalid(`${name} must be an integer from 1 to 65535, got ${String(value)}`);
    }
  }
  return { cols: cols as number, rows: rows as number };
}

/** Splits node-pty's `args` (an array, or one string as on Windows, refused here) into argv. */
function argvOf(file: unknown, args: unknown): string[] {
  if (typeof file !== 'string' || file === '') throw invalid('file must be a non-empty string');
  if (typeof args === 'string') throw invalid('args as one string is a Windows form: pass an array');
  if (args === undefined) return [file];
  if (!Array.isArray(args) || !args.every((arg) => typeof arg === 'string')) throw invalid('args must be an array of strings');
  return [file, ...args];
}

export function resolveOptions(file: unknown, args: unknown, options: unknown, env: NodeJS.ProcessEnv): ResolvedOptions {
  const argv = argvOf(file, args);
  const given = (options ?? {}) as Record<string, unknown>;
  if (typeof given !== 'object' || Array.isArray(given)) throw invalid('options must be an object');
  for (const key of Object.keys(given)) {
    if (given[key] === undefined) continue;
    const why = REFUSED[key];
    if (why !== undefined) throw invalid(`option ${key} is not supported: ${why}`);
    if (!ACCEPTED.has(key)) throw invalid(`unknown option ${key}`);
  }
  const { name = 'xterm', cwd = process.cwd(), encoding = 'utf8', handleFlowControl = false, timeoutMs, cwdFallbackToHome = false } = given;
  const { keepMs = 0, retainBytes = 0, label = '' } = given;
  if (typeof keepMs !== 'number' || !Number.isInteger(keepMs) || keepMs < 0 || keepMs > 0xffff_ffff) throw invalid('keepMs must be an integer number of milliseconds from 0 to 2^32-1');
  if (typeof retainBytes !== 'number' || !Number.isInteger(retainBytes) || retainBytes < 0) throw invalid('retainBytes must be a whole number of bytes');
  if (typeof label !== 'string') throw invalid('label must be a string');
  const socketPath = given.socketPath ?? defaultSocketPath(env);
  if (typeof name !== 'string' || name === '') throw invalid('name must be a non-empty string');
  if (typeof cwd !== 'string' || cwd === '') throw invalid('cwd must be a non-empty string');
  if (typeof socketPath !== 'string' || socketPath === '') throw invalid('socketPath must be a non-empty string');
  if (encoding !== null && encoding !== 'utf8' && encoding !== 'utf-8') {
    throw invalid(`encoding ${String(encoding)} is not supported: use 'utf8' or null`);
  }
  if (typeof cwdFallbackToHome !== 'boolean') throw invalid('cwdFallbackToHome must be a boolean');
  if (handleFlowControl !== false) throw invalid('handleFlowControl is not supported: use pause()/resume()');
  if (timeoutMs !== undefined && (typeof timeoutMs !== 'number' || !(timeoutMs >= 0))) {
    throw invalid('timeoutMs must be a number of milliseconds, 0 or more');
  }
  const { cols, rows } = checkSize(given.cols ?? DEFAULT_COLS, given.rows ?? DEFAULT_ROWS);
  const source = (given.env ?? env) as Record<string, unknown>;
  if (typeof source !== 'object' || source === null) throw invalid('env must be an object');
  const programEnv: Record<string, string> = {};
  for (const [key, value] of Object.entries(source)) {
    // process.env-shaped objects may hold undefined; node-pty skips those too.
    if (value === undefined) continue;
    programEnv[key] = String(value);
  }
  // As node-pty: `name` is the program's TERM.
  programEnv.TERM = name;
  return {
    argv,
    term: name,
    cols,
    rows,
    cwd,
    cwdFallbackToHome,
    env: programEnv,
    encoding: encoding === null ? null : 'utf8',
    socketPath,
    timeoutMs: timeoutMs as number | undefined,
    keepMs,
    retainBytes,
    label,
    sandbox: checkSandboxOptions(given),
  };
}

/** attach(id, options) resolved: the session id, where to replay from, and the terminal's side. */
export function resolveAttachOptions(id: unknown, options: unknown, env: NodeJS.ProcessEnv): ResolvedOptions {
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1) throw invalid(`a session id is an integer from 1 to 2^53-1, not ${String(id)}`);
  const given = (options ?? {}) as Record<string, unknown>;
  if (typeof given !== 'object' || Array.isArray(given)) throw invalid('options must be an object');
  for (const key of Object.keys(given)) {
    if (given[key] !== undefined && !ATTACH_ACCEPTED.has(key)) throw invalid(`unknown attach option ${key}`);
  }
  const { cursor = 0, role = 'control' } = given;
  if (typeof cursor !== 'number' || !(cursor === -1 || (Number.isSafeInteger(cursor) && cursor >= 0))) {
    throw invalid(`cursor must be -1 (from now) or an offset from 0 to 2^53-1, not ${String(cursor)}`);
  }
  if (role !== 'control' && role !== 'observe') throw invalid(`role must be 'control' or 'observe', not ${String(role)}`);
  const { cols, rows, encoding, socketPath, timeoutMs } = given;
  const base = resolveOptions(`session ${id}`, [], { cols, rows, encoding, socketPath, timeoutMs }, env);
  return { ...base, env: {}, attach: { id, from: cursor === -1 ? 'now' : cursor, role } };
}
