// A kept session as LIST shows it (pure): root's own facts (its phase, its count of connections, its
// deadline, the program's end) with the helper's STATE for the offsets and roles when it answered in
// time, or the last one it gave (`fresh` false). docs/protocol.md "SESSIONS".
import { entryFacts, type DescribedEntry, type HelperState, type KeptFacts } from '../control/index.ts';
import { SessionState } from '../protocol/index.ts';

export interface DescribeFacts {
  facts: KeptFacts;
  /** The session's end is decided (draining or later, or a stop under way). */
  finishing: boolean;
  /** Root's count of attached connections. */
  attached: number;
  /** Unix ms when the keep deadline passes, while armed. */
  deadlineAt: number | undefined;
  /** The program's wait status, once the helper said it ended. */
  programEnded: number | undefined;
  /** The helper's STATE: this answer's, or the last known (`fresh` false), or none yet. */
  state: HelperState | undefined;
  fresh: boolean;
}

/** A wait status as systemd's ExecMainCode and ExecMainStatus: 1 exited (its code), 2 killed, 3 dumped (the signal). */
export function endOf(waitStatus: number | undefined): { endCode: number; endStatus: number } {
  if (waitStatus === undefined) return { endCode: 0, endStatus: 0 };
  const signal = waitStatus & 0x7f;
  if (signal === 0) return { endCode: 1, endStatus: (waitStatus >> 8) & 0xff };
  return { endCode: waitStatus & 0x80 ? 3 : 2, endStatus: signal };
}

export function describedEntry(described: DescribeFacts): DescribedEntry {
  const { facts, attached, state } = described;
  const lifecycle = described.finishing
    ? SessionState.FINISHING
    : attached > 0
      ? SessionState.ATTACHED
      : described.programEnded !== undefined
        ? SessionState.ENDED
        : SessionState.DETACHED;
  // The helper's roles are its word: never more than root's own count of connections.
  const controllers = state?.controller !== undefined && attached > 0 ? 1 : 0;
  const observers = Math.max(0, Math.min(state?.observers ?? 0, attached - controllers));
  return {
    ...entryFacts(facts),
    state: lifecycle,
    controllers,
    observers,
    deadlineMs: lifecycle === SessionState.FINISHING ? 0 : (described.deadlineAt ?? 0),
    oldest: (state?.oldest ?? 0n).toString(),
    next: (state?.next ?? 0n).toString(),
    fresh: described.fresh,
    ...endOf(described.programEnded),
  };
}
