// status's kept sessions: the list as root sees it, through this CLI's own `ls --json` (run as a command, since
// status is synchronous), and its lines for people.
import { join } from 'node:path';
import type { KeptSession } from '../client/index.ts';
import type { Runner } from '../operate/index.ts';
import { formatSessionTable } from './session-table.ts';

export type KeptStatus = { sessions: KeptSession[] } | { error: string };

/** LIST within 2 s through `cli.js ls --json` of the bundle at `bundleDir`; the reason it could not be had else. */
export function gatherKept(run: Runner, bundleDir: string, socket: string): KeptStatus {
  const ran = run(process.execPath, [join(bundleDir, 'cli.js'), 'ls', '--json', '--timeout', '2', '--socket', socket]);
  if (ran.code !== 0) return { error: lastLine(ran.stderr) || `ls exited with status ${ran.code}` };
  try {
    const sessions = JSON.parse(ran.stdout) as unknown;
    if (!Array.isArray(sessions)) return { error: 'ls printed no list' };
    return { sessions: sessions as KeptSession[] };
  } catch {
    return { error: 'ls printed no list' };
  }
}

/** Whether status's broker state ("active (running)", as systemctl shows ActiveState and SubState) is a running
 * broker: only then can sessions be kept, and only then is it asked (asking would socket-activate one). */
export function brokerRuns(state: string): boolean {
  return /^(active|reloading)\b/.test(state);
}

/** "kept sessions N" and ls's table (attached or detached, retained bytes), or why they are unavailable. */
export function formatKept(kept: KeptStatus, nowMs: number): string {
  if ('error' in kept) return `kept sessions unavailable (${kept.error})\n`;
  if (kept.sessions.length === 0) return 'kept sessions 0\n';
  const table = formatSessionTable(kept.sessions, nowMs).trimEnd().split('\n').map((line) => `  ${line}`);
  return `kept sessions ${kept.sessions.length}\n${table.join('\n')}\n`;
}

function lastLine(text: string): string {
  return text.trim().split('\n').at(-1)?.replace(/^opencode-ptyctl: /, '') ?? '';
}
