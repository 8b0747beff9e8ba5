// `ls`'s table of kept sessions, as a pure function of the list and the time.
import type { KeptSession } from '../client/index.ts';

const HEADERS = ['ID', 'STATE', 'ORIGIN', 'LABEL', 'PROGRAM', 'PID', 'RETAINED', 'ATTACHED', 'DEADLINE'] as const;

/** One table line per session, columns padded; text a peer chose is shown without control characters. */
export function formatSessionTable(sessions: readonly KeptSession[], nowMs: number): string {
  if (sessions.length === 0) return 'no kept sessions\n';
  const rows = sessions.map((session) => [
    String(session.id),
    stateText(session),
    ORIGIN_TEXT[session.origin] ?? '?',
    printable(session.label) || '-',
    printable(session.program),
    session.programPid === 0 ? '-' : String(session.programPid),
    bytesText(session.next - session.oldest),
    `${session.controllers}+${session.observers}`,
    session.deadlineMs === null ? 'attached' : deadlineText(session.deadlineMs - nowMs),
  ]);
  const widths = HEADERS.map((header, column) => Math.max(header.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: readonly string[]) => cells.map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column]!))).join('  ');
  return `${[line(HEADERS), ...rows.map(line)].join('\n')}\n`;
}

/** Who started it: the agent's main process, another process of its unit (a plugin's label is its own
 * choice), or not known. */
const ORIGIN_TEXT: Record<string, string> = { 'main-pid': 'main', 'unit-process': 'unit', unknown: '?' };

function stateText(session: KeptSession): string {
  let text: string = session.state;
  if (session.end) text += session.end.code === 1 ? ` (exit ${session.end.status})` : ` (signal ${session.end.status})`;
  // Offsets the supervisor could not refresh in time are the last known ones.
  return session.fresh ? text : `${text}*`;
}

/** Bytes in binary units, as `ls -h` prints them. */
export function bytesText(bytes: number): string {
  if (bytes < 1024) return `${bytes}B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value >= 10 ? Math.round(value) : value.toFixed(1)}${units[unit]}`;
}

/** Time until the keep deadline: "in 9m12s", "in 2h03m", or "passed". */
export function deadlineText(ms: number): string {
  if (ms <= 0) return 'passed';
  const seconds = Math.ceil(ms / 1000);
  if (seconds < 60) return `in ${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `in ${minutes}m${String(seconds % 60).padStart(2, '0')}s`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `in ${hours}h${String(minutes % 60).padStart(2, '0')}m`;
  return `in ${Math.floor(hours / 24)}d${String(hours % 24).padStart(2, '0')}h`;
}

function printable(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/gu, '?');
}
