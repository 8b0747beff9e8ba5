// Frame shapes: one discriminated union, keyed by a literal `type`.

export interface EnvEntry {
  name: string;
  value: string;
}

/**
 * Version 2's end record: what the session's unit used and what went through it, each figure null
 * when the server could not measure it (sent as 2^64-1, never as 0). Integers up to 2^53.
 */
export interface Accounting {
  /** The unit's CPUUsageNSec (its cgroup's cpu.stat usage_usec, in ns). */
  cpuUsageNsec: number | null;
  /** The unit's memory: MemoryPeak (memory.peak) where there is one, else MemoryCurrent at the session's end. */
  memoryBytes: number | null;
  /** IOReadBytes, IOWriteBytes (IO accounting on). */
  ioReadBytes: number | null;
  ioWriteBytes: number | null;
  /** TasksCurrent at the session's end. */
  tasks: number | null;
  /** INPUT payload bytes the server received, OUTPUT payload bytes it sent. */
  inputBytes: number | null;
  outputBytes: number | null;
  /** From STARTED to the end of the unit, in microseconds. */
  durationUsec: number | null;
}

/** The names of Accounting's figures in wire order. */
export const ACCOUNTING_FIELDS = [
  'cpuUsageNsec',
  'memoryBytes',
  'ioReadBytes',
  'ioWriteBytes',
  'tasks',
  'inputBytes',
  'outputBytes',
  'durationUsec',
] as const satisfies readonly (keyof Accounting)[];

/** How the session's main process ended, as EXIT reports it (systemd's ExecMainCode/Status, Result). */
export interface ProgramEnd {
  code: number;
  status: number;
  result: string;
}

/** Version 4: a session's network (docs/protocol.md "Version 4"): none but its own loopback, the host's
 * loopback only, or the host's network as the client's account has it. Ordered from least to most. */
export const NETWORK_MODES = ['off', 'host-loopback', 'on'] as const;
export type NetworkMode = (typeof NETWORK_MODES)[number];

/** Version 4: what a session may use, each a positive integer up to 2^53-1 when asked for. */
export interface Budgets {
  /** Wall clock from the unit's start; past it the session ends (EXIT result `timeout`). */
  timeMs?: number;
  /** The unit's MemoryMax=. */
  memoryBytes?: number;
  /** The unit's TasksMax=. */
  tasks?: number;
  /** The unit's CPUQuota=, in percent of one CPU. */
  cpuPercent?: number;
}

/** The budgets in wire order, with their bit in START's budget flags. */
export const BUDGET_FIELDS = ['timeMs', 'memoryBytes', 'tasks', 'cpuPercent'] as const satisfies readonly (keyof Budgets)[];

/** Version 3: a kept session's lifecycle state in a SESSIONS entry. */
export const SessionState = {
  STARTING: 1,
  ATTACHED: 2,
  DETACHED: 3,
  /** The program ended while detached; its EXIT waits for an ATTACH. */
  ENDED: 4,
  FINISHING: 5,
  /** Its worker did not answer within the bound: the entry holds what the broker last knew. */
  UNKNOWN: 6,
} as const;
export type SessionStateCode = (typeof SessionState)[keyof typeof SessionState];

/** Who started a kept session (SESSIONS' origin): the broker's look at START, as the reserved admission
 * slot's (the peer's pidfd and a look at the client service newer than the connection). Only a MAIN_PID
 * session is the agent's own; another process of its unit (a plugin, a tool) may start one too. */
export const SessionOrigin = {
  /** The client service's MainPID. */
  MAIN_PID: 1,
  /** Another process of the client unit. */
  UNIT_PROCESS: 2,
  /** Not known: no client service to ask (requireClientUnit false), or the look failed. */
  UNKNOWN: 3,
} as const;
export type SessionOriginCode = (typeof SessionOrigin)[keyof typeof SessionOrigin];

/** Version 3: a connection's role in a kept session (ATTACH, ATTACHED, CONTROLLER_CHANGED). */
export const Role = { CONTROL: 1, OBSERVE: 2 } as const;
export type RoleCode = (typeof Role)[keyof typeof Role];

/**
 * Version 3: one kept session as SESSIONS lists it. Ids and times are numbers (below 2^53 on the wire);
 * offsets are bigints, as every offset of the codec (u64 on the wire).
 */
export interface SessionEntry {
  id: number;
  state: SessionStateCode;
  controllers: number;
  observers: number;
  rows: number;
  cols: number;
  /** 0 where not known (a session still starting). */
  programPid: number;
  mainPid: number;
  /** Unix time in ms. */
  startedAtMs: number;
  keepMs: number;
  /** Unix time in ms when the keep deadline passes; 0 while a connection is attached. */
  deadlineMs: number;
  oldest: bigint;
  next: bigint;
  /** True when the offsets were read from the session helper within the bound; else the last known. */
  fresh: boolean;
  /** 0 while the program runs; else how it ended (1 exited, 2 killed, 3 dumped) and endStatus. */
  endCode: number;
  endStatus: number;
  /** Who started it (SessionOrigin). */
  origin: SessionOriginCode;
  label: string;
  /** argv[0], cut at MAX_LIST_PROGRAM bytes; the cwd, cut at MAX_LIST_CWD bytes. */
  program: string;
  cwd: string;
}

export type Frame =
  | { type: 'hello'; minVersion: number; maxVersion: number }
  | { type: 'welcome'; version: number }
  | {
      type: 'start';
      rows: number;
      cols: number;
      cwdDev: bigint;
      cwdIno: bigint;
      argv: string[];
      env: EnvEntry[];
      /** Version 3: keep the session this long after its last connection (0, the default: not kept). */
      keepMs?: number;
      /** Version 3: bytes of output the session retains (0, the default: the server's default). */
      retainBytes?: number;
      /** Version 3: plain text the client names the session by, in LIST ('' by default). */
      label?: string;
      /** Version 4: the profile asked for ('' or absent: the server's floor, session.minProfile). */
      profile?: string;
      /** Version 4: the network asked for (absent: the server's default). */
      network?: NetworkMode;
      /** Version 4: the budgets asked for; an absent one is the server's default. */
      budgets?: Budgets;
    }
  /** Version 2 adds the program's own pid (mainPid is the session helper, its parent) and the
   * environment names the server did not pass on. */
  | { type: 'started'; mainPid: number; unit: string; programPid?: number; droppedEnv?: string[]; sessionId?: number }
  | { type: 'input'; data: Buffer }
  | { type: 'output'; data: Buffer }
  | { type: 'resize'; rows: number; cols: number }
  | { type: 'signal'; signal: number }
  | { type: 'stop' }
  /** Version 2: how the program ended once stopped, and the end record. */
  | { type: 'stopped'; end?: ProgramEnd & { accounting: Accounting } }
  /** Version 2 adds the end record. */
  | { type: 'exit'; code: number; status: number; result: string; accounting?: Accounting }
  /** Version 2: the client's input has ended. */
  | { type: 'end-input' }
  | { type: 'error'; code: number; message: string }
  | { type: 'credit'; bytes: number }
  /** Version 3: the requests sent instead of START, and what only they are answered with. */
  | { type: 'list' }
  | { type: 'sessions'; sessions: SessionEntry[] }
  /** fromOffset: an absolute offset, or Limits.FROM_NOW. */
  | { type: 'attach'; id: number; fromOffset: bigint; role: RoleCode; rows: number; cols: number }
  | {
      type: 'attached';
      id: number;
      role: RoleCode;
      generation: number;
      oldest: bigint;
      next: bigint;
      programPid: number;
      mainPid: number;
      unit: string;
    }
  /** The next OUTPUT byte has offset `oldest`; `dropped` bytes this connection asked for are gone. */
  | { type: 'truncated'; oldest: bigint; dropped: bigint }
  /** The receiver's role from now on, in controller generation `generation`. */
  | { type: 'controller-changed'; generation: number; role: RoleCode }
  | { type: 'stop-session'; id: number };

export type FrameName = Frame['type'];
export type FrameOf<T extends FrameName> = Extract<Frame, { type: T }>;

/** Which peer sends a frame: decoders accept only the frames their peer may send. */
export type Direction = 'to-server' | 'to-client';
