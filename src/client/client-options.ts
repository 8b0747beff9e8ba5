// What a caller passes to connect(), start(), list() and stopSession().
import type { SandboxOptions } from './sandbox-options.ts';

export interface ConnectOptions {
  /** Abandons the handshake (rejecting with ABORTED). */
  signal?: AbortSignal;
  /** Rejects with TIMEOUT when no WELCOME came within this many ms (default 30 s; 0: no deadline). */
  timeoutMs?: number;
}

export interface StartOptions extends SandboxOptions {
  /** Program and arguments; argv[0] is resolved by the session's PATH. */
  argv: string[];
  /** Directory the session runs in, opened here and handed over as an fd (default: process.cwd()). */
  cwd?: string;
  /** Environment for the program; the server applies its own policy on top. What one START cannot carry
   * (over 128 names or 64 KiB, or not valid for execve) is left out and named in Session.droppedEnv. */
  env?: Record<string, string>;
  rows?: number;
  cols?: number;
  /** Version 3: keep the session this many ms after its last connection closes (0, the default: the session
   * ends with its connection). The server bounds it (session.maxKeepMs) and refuses more, never lowers it. */
  keepMs?: number;
  /** Version 3, with keepMs: bytes of output the session retains for a later attach (4096 to 64 MiB; default
   * the server's, 2 MiB unless configured). */
  retainBytes?: number;
  /** Version 3: plain text (at most 256 bytes, no control characters) that list() shows. */
  label?: string;
  /** Abandons waiting for STARTED (rejecting with ABORTED and closing the connection). */
  signal?: AbortSignal;
  /** Rejects with TIMEOUT (and closes) when no STARTED came within this many ms (default 30 s; 0: none). */
  timeoutMs?: number;
}

/** Options of list() and stopSession(). */
export interface RequestOptions {
  signal?: AbortSignal;
  /** Rejects with TIMEOUT (and closes) when no answer came within this many ms (default 30 s; 0: none). */
  timeoutMs?: number;
}
