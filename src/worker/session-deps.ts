// What a session needs of its worker (session.ts, session-start.ts): the bus, the config, where its
// helper is, and the reports and journal lines it sends.
import type { Config } from '../config/index.ts';
import type { WorkerMessage } from '../control/index.ts';
import type { Units } from '../systemd/index.ts';
import type { KeptStore } from '../kept-store/index.ts';
import type { Phase, SessionEvent } from './session-state.ts';
import type { WarmClaim } from './warm-unit.ts';

export interface SessionDeps {
  manager: Units;
  config: Config;
  /** The session helper's path as the unit sees it. */
  helperPath: string;
  report(message: WorkerMessage): void;
  log(message: string): void;
  /** The protocol version WELCOME named (default 1): the helper is told it, and the frames follow it. */
  version?: number;
  /** Version 3: asks the broker whether a START may be kept (limits.maxKept). */
  askKeep?(): Promise<boolean>;
  /** Where a kept session's rendezvous socket and record are (absent: sessions are not kept past their worker). */
  keptStore?: KeptStore;
  /** The supervisor's cgroup (kept-store/supervisor-cgroup.ts), which a kept session's rendezvous names. */
  rendezvousCgroup?: string;
  /** The spare's warm unit for this START, when it fits and its helper answered its CLAIM (warm-unit.ts);
   * undefined: the START starts a fresh unit. Asked at most once a session. */
  drawWarm?(kept: boolean): Promise<WarmClaim | undefined>;
  /** Each event once the state machine has taken it, with the phase it left the session in (tests, tracing). */
  onEvent?(event: SessionEvent, phase: Phase): void;
}
