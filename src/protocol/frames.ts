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
    }
  /** Version 2 adds the program's own pid (mainPid is the session helper, its parent) and the
   * environment names the server did not pass on. */
  | { type: 'started'; mainPid: number; unit: string; programPid?: number; droppedEnv?: string[] }
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
  | { type: 'credit'; bytes: number };

export type FrameName = Frame['type'];
export type FrameOf<T extends FrameName> = Extract<Frame, { type: T }>;

/** Which peer sends a frame: decoders accept only the frames their peer may send. */
export type Direction = 'to-server' | 'to-client';
