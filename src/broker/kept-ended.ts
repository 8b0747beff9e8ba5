// What the broker answers for a kept session whose end root keeps past its unit (pure): LIST's entry
// (state ended, with its end), ATTACH's ATTACHED then EXIT (no replay: the ring went with the session's
// helper), STOP_SESSION's STOPPED with that end, and which ended records the bound leaves out.
// docs/protocol.md "Detaching, the keep deadline, and the end"; kept-store/ended-record.ts.
import { entryFacts } from '../control/index.ts';
import { Limits, Role, SessionState, type Frame, type FrameOf, type SessionEntry } from '../protocol/index.ts';
import type { EndedRecord } from '../kept-store/index.ts';

/** LIST's entry: ended (state 4) with its end, no connection, its deadline when root forgets it. */
export function endedEntry(ended: EndedRecord): SessionEntry {
  const next = BigInt(ended.next);
  return {
    ...entryFacts(ended.session),
    state: SessionState.ENDED,
    controllers: 0,
    observers: 0,
    deadlineMs: ended.untilMs,
    oldest: next,
    next,
    fresh: false,
    endCode: ended.end.code,
    endStatus: ended.end.status,
  };
}

/**
 * ATTACH's answer: ATTACHED, TRUNCATED when the client asked for bytes root knows were written (below
 * the last `next` it learnt: they went with the helper), then EXIT with the kept end. `oldest` and
 * `next` are that last offset, or the client's own when it asked from further on (root may have learnt
 * less than the client read), so no rule of the offsets is broken. A controller takes the next
 * generation, as an ATTACH with role control does.
 */
export function attachAnswer(ended: EndedRecord, attach: Pick<FrameOf<'attach'>, 'role' | 'fromOffset'>): Frame[] {
  const known = BigInt(ended.next);
  const from = attach.fromOffset === Limits.FROM_NOW ? known : attach.fromOffset;
  const next = from > known ? from : known;
  const { session } = ended;
  const generation = Math.min(0xffff_ffff, ended.generation + (attach.role === Role.CONTROL ? 1 : 0));
  const frames: Frame[] = [{ type: 'attached', id: session.sessionId, role: attach.role, generation, oldest: next, next, programPid: session.programPid, mainPid: session.mainPid, unit: session.unit }];
  if (from < next) frames.push({ type: 'truncated', oldest: next, dropped: next - from });
  frames.push({ type: 'exit', ...ended.end });
  return frames;
}

/** STOP_SESSION's answer: STOPPED with the kept end, as for a session whose program ended while detached. */
export function stopAnswer(ended: EndedRecord): Frame {
  return { type: 'stopped', end: ended.end };
}

/** The ended records past the bound (`max`, limits.maxKept): the soonest to be forgotten go first. */
export function overBound(ends: Iterable<EndedRecord>, max: number): EndedRecord[] {
  const sorted = [...ends].sort((a, b) => b.untilMs - a.untilMs || b.endedAtMs - a.endedAtMs);
  return sorted.slice(Math.max(0, max));
}
