// status: the socket, the broker and every live session as systemd reports them, and the last errors.
import { readFileSync, readlinkSync, statSync } from 'node:fs';
import { BROKER_UNIT, SOCKET_UNIT } from './layout.ts';
import { figure, listUnits, showUnit, type Runner } from './system.ts';
import { LIMIT_PROPERTIES, limitsText, sessionLimits, type SessionLimits } from './session-limits.ts';

export interface SessionStatus {
  unit: string;
  state: string;
  user: string;
  mainPid: number;
  program: string[] | null;
  cwd: string | null;
  /** A warm unit (docs/architecture.md "Warm units"): started, its helper waiting for a START; no program, no cwd yet. */
  warm: boolean;
  started: string;
  /** Unavailable figures are null, never zero. */
  cpuNsec: string | null;
  memoryBytes: string | null;
  tasks: string | null;
  /** Its profile, network and budgets as its unit holds them. */
  limits: SessionLimits;
}

export interface Status {
  socket: { unit: string; state: string; listen: string; path: string | null; mode: string | null; group: string | null };
  broker: { unit: string; state: string; mainPid: number; since: string | null; memoryBytes: string | null; status: string; sessionsServed: number | null };
  sessions: SessionStatus[];
  recentErrors: { time: string; priority: number; message: string }[];
}

function orNull(value: bigint | undefined): string | null {
  return value === undefined ? null : value.toString();
}

function procArgv(pid: number): string[] | null {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(0, -1);
  } catch {
    return null;
  }
}

/** The program and its arguments from the session helper's argv (pure). */
export function helperProgram(argv: string[]): string[] {
  let at = 1;
  while (argv[at]?.startsWith('--')) at++;
  return argv.slice(at + 2);
}

/**
 * What a session's helper runs (pure): a fresh unit's helper names its program in its own argv; a warm
 * unit's (`--warm` alone) got its arguments later over its control channel, so its program is its child's
 * argv (`child`), and with no child it is still warm.
 */
export function sessionProgram(argv: string[], child: string[] | null): { program: string[]; warm: boolean } {
  if (argv.length === 2 && argv[1] === '--warm') return child ? { program: child, warm: false } : { program: [], warm: true };
  return { program: helperProgram(argv), warm: false };
}

/** The argv of the helper's first child (its program), or null when it has none. */
function childArgv(pid: number): string[] | null {
  try {
    const child = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(' ')[0];
    return child ? procArgv(Number(child)) : null;
  } catch {
    return null;
  }
}

function groupName(gid: number): string {
  try {
    for (const line of readFileSync('/etc/group', 'utf8').split('\n')) {
      const [name, , id] = line.split(':');
      if (Number(id) === gid && name) return name;
    }
  } catch {
    // fall through to the number
  }
  return String(gid);
}

/** Journal entries (-o json) to time, priority and message. */
export function parseJournal(text: string): Status['recentErrors'] {
  return text
    .split('\n')
    .filter(Boolean)
    .flatMap((line) => {
      try {
        const entry = JSON.parse(line) as Record<string, unknown>;
        const micros = Number(entry.__REALTIME_TIMESTAMP);
        return [{ time: new Date(micros / 1000).toISOString(), priority: Number(entry.PRIORITY ?? 6), message: String(entry.MESSAGE ?? '') }];
      } catch {
        return [];
      }
    });
}

export function gatherStatus(run: Runner, unitPrefix: string): Status {
  const socket = showUnit(run, SOCKET_UNIT, ['ActiveState', 'SubState', 'Listen']);
  const listen = socket.Listen ?? '';
  const path = /^(\/\S+) \(Stream\)/.exec(listen)?.[1] ?? null;
  const stat = path ? statSync(path, { throwIfNoEntry: false }) : undefined;
  const broker = showUnit(run, BROKER_UNIT, ['ActiveState', 'SubState', 'MainPID', 'ActiveEnterTimestamp', 'MemoryCurrent', 'StatusText', 'InvocationID']);
  const running = broker.ActiveState === 'active';
  let served: number | null = null;
  if (running && broker.InvocationID) {
    const ends = run('journalctl', ['--no-pager', '-o', 'cat', `_SYSTEMD_INVOCATION_ID=${broker.InvocationID}`, 'OPENCODE_PTY_EVENT=session-end']);
    served = ends.code === 0 ? ends.stdout.split('\n').filter(Boolean).length : null;
  }
  const sessions = listUnits(run, `${unitPrefix}session-*.service`).map((unit): SessionStatus => {
    const props = showUnit(run, unit, ['ActiveState', 'User', 'ExecMainPID', 'ActiveEnterTimestamp', 'CPUUsageNSec', 'MemoryCurrent', 'TasksCurrent', ...LIMIT_PROPERTIES]);
    const mainPid = Number(props.ExecMainPID ?? 0);
    const argv = mainPid ? procArgv(mainPid) : null;
    let cwd: string | null = null;
    try {
      cwd = mainPid ? readlinkSync(`/proc/${mainPid}/cwd`) : null;
    } catch {
      cwd = null;
    }
    // The helper's argv is [--OPTION=VALUE…] ROWS COLS PROGRAM ARG…, or --warm alone.
    const shape = argv ? sessionProgram(argv, argv[1] === '--warm' ? childArgv(mainPid) : null) : null;
    return {
      unit,
      state: props.ActiveState ?? 'unknown',
      user: props.User ?? '',
      mainPid,
      program: shape && !shape.warm ? shape.program : null,
      // A warm helper has not entered a START's directory yet: the cwd it has is no session's.
      cwd: shape?.warm ? null : cwd,
      warm: shape?.warm ?? false,
      started: props.ActiveEnterTimestamp ?? '',
      cpuNsec: orNull(figure(props.CPUUsageNSec)),
      memoryBytes: orNull(figure(props.MemoryCurrent)),
      tasks: orNull(figure(props.TasksCurrent)),
      limits: sessionLimits(props),
    };
  });
  const journal = run('journalctl', ['--no-pager', '-o', 'json', '-u', BROKER_UNIT, '-p', 'warning', '-n', '10']);
  return {
    socket: {
      unit: SOCKET_UNIT,
      state: `${socket.ActiveState ?? 'unknown'} (${socket.SubState ?? '?'})`,
      listen,
      path,
      mode: stat ? (stat.mode & 0o7777).toString(8).padStart(4, '0') : null,
      group: stat ? groupName(stat.gid) : null,
    },
    broker: {
      unit: BROKER_UNIT,
      state: `${broker.ActiveState ?? 'unknown'} (${broker.SubState ?? '?'})`,
      mainPid: Number(broker.MainPID ?? 0),
      since: running ? (broker.ActiveEnterTimestamp ?? null) : null,
      memoryBytes: running ? orNull(figure(broker.MemoryCurrent)) : null,
      status: broker.StatusText ?? '',
      sessionsServed: served,
    },
    sessions,
    recentErrors: journal.code === 0 ? parseJournal(journal.stdout) : [],
  };
}

function human(value: string | null, unit: 'bytes' | 'nsec' | 'count'): string {
  if (value === null) return 'unavailable';
  const n = Number(value);
  if (unit === 'bytes') return n >= 1 << 20 ? `${(n / (1 << 20)).toFixed(1)} MiB` : `${(n / 1024).toFixed(0)} KiB`;
  if (unit === 'nsec') return `${(n / 1e6).toFixed(0)} ms`;
  return value;
}

/**
 * Text for the operator's terminal: a session's cwd and program are the client's own names, and journal
 * lines may quote a peer, so control characters (C0, DEL, C1: ESC and CSI start terminal sequences, a
 * line break would forge a line of this report) and bidirectional overrides are shown escaped, never
 * sent to the terminal; a backslash is doubled, so an escape shown is never the client's own text
 * (JSON, already unambiguous, keeps its own) (pure).
 */
export function printable(text: string, escapeBackslash = true): string {
  return text.replace(/[\\\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/gu, (c) => {
    if (c === '\\') return escapeBackslash ? '\\\\' : c;
    const code = c.codePointAt(0)!;
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/** The human form of status (pure); every value shown through printable(). */
export function formatStatus(status: Status): string {
  const p = printable;
  const lines = [
    `socket   ${p(status.socket.unit)}: ${p(status.socket.state)}`,
    `         ${p(status.socket.path ?? status.socket.listen ?? '(not listening)')}${status.socket.mode ? ` mode ${p(status.socket.mode)} group ${p(status.socket.group ?? '')}` : ''}`,
    `broker   ${p(status.broker.unit)}: ${p(status.broker.state)}${status.broker.mainPid ? `, pid ${status.broker.mainPid}` : ''}`,
  ];
  if (status.broker.since) lines.push(`         since ${p(status.broker.since)}, memory ${human(status.broker.memoryBytes, 'bytes')}, sessions served ${status.broker.sessionsServed ?? 'unavailable'}`);
  if (status.broker.status) lines.push(`         ${p(status.broker.status)}`);
  // A warm unit is listed, but is no session until a START draws it: the count says so.
  const warm = status.sessions.filter((s) => s.warm).length;
  lines.push(`sessions ${status.sessions.length - warm}${warm ? ` (and ${warm} warm unit${warm === 1 ? '' : 's'} waiting for a START)` : ''}`);
  for (const s of status.sessions) {
    lines.push(`  ${p(s.unit)} (${p(s.state)}) user ${p(s.user)} pid ${s.mainPid}`);
    if (s.warm) lines.push('    warm: waiting for a START (no program, no terminal yet)');
    else lines.push(`    program ${s.program ? p(JSON.stringify(s.program), false) : 'unavailable'} cwd ${s.cwd === null ? 'unavailable' : p(s.cwd)}`);
    lines.push(`    started ${p(s.started)}, cpu ${human(s.cpuNsec, 'nsec')}, memory ${human(s.memoryBytes, 'bytes')}, tasks ${p(human(s.tasks, 'count'))}`);
    lines.push(`    ${p(limitsText(s.limits))}`);
  }
  lines.push(`recent warnings and errors ${status.recentErrors.length}`);
  for (const e of status.recentErrors) lines.push(`  ${p(e.time)} <${e.priority}> ${p(e.message)}`);
  return `${lines.join('\n')}\n`;
}
