// A client environment fitted to what one START can carry: what does not fit is dropped and named, never a BAD_START.
// Agents hand over their whole environment (often more than the 128 names a START holds); what cannot be sent
// is reported (Session.droppedEnv) rather than failing the session.
import { Limits, type EnvEntry } from '../protocol/index.ts';

export interface FittedEnvironment {
  entries: EnvEntry[];
  /** Names left out, in the order given: not valid for execve, or beyond the protocol's limits. */
  dropped: string[];
}

/** START's fixed part: rows, cols (2 + 2), cwd dev and ino (8 + 8), argc and envc (2 + 2). */
const START_FIXED = 24;

/** Names kept first when not everything fits: what a terminal and a shell need to work at all. */
const FIRST = ['TERM', 'PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'LC_ALL', 'LC_CTYPE'];

function utf8Length(value: string): number | undefined {
  // A lone surrogate has no UTF-8 form (the encoder refuses it).
  if (/\p{Cs}/u.test(value)) return undefined;
  return Buffer.byteLength(value, 'utf8');
}

/** Fits `env` into one START beside `argv`. The argv itself is the caller's to keep within limits. */
export function fitEnvironment(env: Readonly<Record<string, string>>, argv: readonly string[]): FittedEnvironment {
  let room = Limits.MAX_FRAME_PAYLOAD - START_FIXED;
  for (const value of argv) room -= 4 + Buffer.byteLength(value, 'utf8');
  const names = Object.keys(env);
  const order = [...FIRST.filter((name) => Object.hasOwn(env, name)), ...names.filter((name) => !FIRST.includes(name))];
  const kept = new Set<string>();
  const entries: EnvEntry[] = [];
  for (const name of order) {
    const value = env[name]!;
    if (name.length === 0 || name.includes('=') || name.includes('\0') || value.includes('\0')) continue;
    const nameBytes = utf8Length(name);
    const valueBytes = utf8Length(value);
    if (nameBytes === undefined || valueBytes === undefined) continue;
    if (nameBytes > Limits.MAX_STRING || valueBytes > Limits.MAX_STRING) continue;
    const size = 8 + nameBytes + valueBytes;
    if (entries.length === Limits.MAX_ENVC || size > room) continue;
    room -= size;
    kept.add(name);
    entries.push({ name, value });
  }
  return { entries, dropped: names.filter((name) => !kept.has(name)) };
}
