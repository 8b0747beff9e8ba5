// Frame shapes: one discriminated union, keyed by a literal `type`.

export interface EnvEntry {
  name: string;
  value: string;
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
  | { type: 'started'; mainPid: number; unit: string }
  | { type: 'input'; data: Buffer }
  | { type: 'output'; data: Buffer }
  | { type: 'resize'; rows: number; cols: number }
  | { type: 'signal'; signal: number }
  | { type: 'stop' }
  | { type: 'stopped' }
  | { type: 'exit'; code: number; status: number; result: string }
  | { type: 'error'; code: number; message: string }
  | { type: 'credit'; bytes: number };

export type FrameName = Frame['type'];
export type FrameOf<T extends FrameName> = Extract<Frame, { type: T }>;

/** Which peer sends a frame: decoders accept only the frames their peer may send. */
export type Direction = 'to-server' | 'to-client';
