// A kept session's end that root keeps past its unit (issue 32): the unit ended by itself (its wall
// clock, an OOM kill, its helper killed) while nobody was attached, so no last frame reached anyone and
// the helper's ring went with it. What stays is root's own word: the session's record, how systemd saw
// the unit end, and the end record's figures. LIST shows it ended; ATTACH gets ATTACHED then EXIT,
// STOP_SESSION gets STOPPED, and it is forgotten then, or at `untilMs` (docs/architecture.md "Kept
// sessions across the supervisor"). Pure: parsing checks every field as untrusted input would be.
import { ACCOUNTING_FIELDS, KEEP_VERSION, encodeFrame, type Accounting, type ProgramEnd } from '../protocol/index.ts';
import { checkRecord, type KeptRecord } from './record.ts';

/** The ended record's format; one of another format is dropped (logged). */
export const ENDED_FORMAT = 1;

export interface EndedRecord {
  format: typeof ENDED_FORMAT;
  /** The session's record as it stood at the end. */
  session: KeptRecord;
  /** How the session ended, as its EXIT says it: the result is systemd's Result for the unit. */
  end: ProgramEnd & { accounting: Accounting };
  /** The last output offset root learnt from the helper (its STATE), a decimal u64 below 2^63; "0" when none. */
  next: string;
  /** The last controller generation root learnt (≥ 1). */
  generation: number;
  /** Unix ms when the unit was seen ended. */
  endedAtMs: number;
  /** Unix ms until which it is kept: the session's keep deadline as it stood at the end. */
  untilMs: number;
}

const MAX_FIGURE = Number.MAX_SAFE_INTEGER;
const int = (value: unknown, min: number, max: number): value is number => Number.isSafeInteger(value) && (value as number) >= min && (value as number) <= max;
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The end root keeps, or undefined when there is none to keep: a keep deadline that passed (or none
 * armed) ends the session as its own deadline would have. `state`: the helper's last STATE, if any.
 */
export function endedRecordOf(session: KeptRecord, end: EndedRecord['end'], state: { next: bigint; generation: number } | undefined, endedAtMs: number, deadlineAt: number | undefined): EndedRecord | undefined {
  if (deadlineAt === undefined || deadlineAt <= endedAtMs) return undefined;
  const next = state && state.next >= 0n && state.next < 2n ** 63n ? state.next.toString() : '0';
  return { format: ENDED_FORMAT, session, end, next, generation: Math.max(1, state?.generation ?? 1), endedAtMs, untilMs: deadlineAt };
}

/** The ended record in `json` for session `id`, or why it cannot be taken. */
export function parseEnded(json: string, id: number, prefix: string): { ended: EndedRecord } | { why: string } {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return { why: 'its ended record is not JSON' };
  }
  return checkEnded(value, id, prefix);
}

/** parseEnded's checks on a value already parsed (a worker's 'kept-ended' report carries one). */
export function checkEnded(value: unknown, id: number, prefix: string): { ended: EndedRecord } | { why: string } {
  if (!isObject(value)) return { why: 'its ended record is not an object' };
  if (value.format !== ENDED_FORMAT) return { why: `its ended record is of format ${JSON.stringify(value.format)}, not ${ENDED_FORMAT}` };
  const session = value.session;
  if (!isObject(session) || typeof session.unit !== 'string') return { why: 'its ended record has no session' };
  const checked = checkRecord(session, session.unit, prefix);
  if ('why' in checked) return checked;
  if (checked.record.sessionId !== id) return { why: "its ended record's id is not its own" };
  // ATTACHED names both pids (≥ 1): a session that ended before its start was seen through has no end to keep.
  if (checked.record.programPid < 1 || checked.record.mainPid < 1) return { why: "its ended record's pids are not known" };
  const end = checkEnd(value.end);
  if (typeof end === 'string') return { why: `its ended record's ${end} is not valid` };
  const fields: [string, boolean][] = [
    ['next', typeof value.next === 'string' && /^\d{1,19}$/.test(value.next) && BigInt(value.next) < 2n ** 63n],
    ['generation', int(value.generation, 1, 0xffff_ffff)],
    ['endedAtMs', int(value.endedAtMs, 0, MAX_FIGURE)],
    ['untilMs', int(value.untilMs, 0, MAX_FIGURE) && (value.untilMs as number) > (value.endedAtMs as number)],
  ];
  const bad = fields.find(([, ok]) => !ok);
  if (bad) return { why: `its ended record's ${bad[0]} is not valid` };
  // Its own object, with the known fields alone.
  return { ended: { format: ENDED_FORMAT, session: checked.record, end, next: BigInt(value.next as string).toString(), generation: value.generation as number, endedAtMs: value.endedAtMs as number, untilMs: value.untilMs as number } };
}

/** The end as EXIT carries it, or the name of the field that is not valid. The codec's own checks
 * decide (the result's token rule, the figures' range): what it would refuse to send is refused here. */
function checkEnd(value: unknown): EndedRecord['end'] | string {
  if (!isObject(value)) return 'end';
  if (!int(value.code, 1, 3)) return 'end code';
  if (!int(value.status, -0x8000_0000, 0x7fff_ffff)) return 'end status';
  if (typeof value.result !== 'string') return 'end result';
  const figures = value.accounting;
  if (!isObject(figures)) return 'end record';
  const accounting = {} as Accounting;
  for (const field of ACCOUNTING_FIELDS) {
    const figure = figures[field];
    if (figure !== null && !int(figure, 0, MAX_FIGURE)) return `end record's ${field}`;
    accounting[field] = figure as number | null;
  }
  const end = { code: value.code as number, status: value.status as number, result: value.result, accounting };
  try {
    encodeFrame({ type: 'exit', ...end }, KEEP_VERSION);
  } catch {
    return 'end result';
  }
  return end;
}

/**
 * The end as this supervisor holds it at `now`, or why it is not held. A legitimate end was seen before
 * now, and kept at most its session's keep from then (its deadline was armed at most `keepMs` before
 * its end): one seen in the future is refused, and its time is cut to `now` plus the keep, itself no
 * longer than `session.maxKeepMs` says now (as boundKeep at an adoption). So no record, however written,
 * is kept for ever or holds a place of limits.maxKept past what a real session could.
 */
export function boundEnded(ended: EndedRecord, now: number, maxKeepMs: number): { ended: EndedRecord } | { why: string } {
  if (ended.endedAtMs > now) return { why: `its ended record's endedAtMs (${ended.endedAtMs}) is in the future` };
  const untilMs = Math.min(ended.untilMs, now + Math.min(ended.session.keepMs, Math.max(1, maxKeepMs)));
  return { ended: untilMs === ended.untilMs ? ended : { ...ended, untilMs } };
}

/** Kept while `now` is before its `untilMs`. */
export function endedExpired(ended: Pick<EndedRecord, 'untilMs'>, now: number): boolean {
  return now >= ended.untilMs;
}
