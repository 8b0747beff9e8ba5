// A kept session's record, as root writes it beside the session's rendezvous socket (store.ts) and the
// next broker reads it back (docs/architecture.md "Kept sessions across the supervisor"): the session's
// facts and when it was last left without a connection. The deadline is reckoned from this record
// alone, never from the helper. Pure: parsing checks every field as untrusted input would be checked
// (the directory is root's alone, but a file half written by a crash, or by another release, is not
// taken on trust either).
import { SessionOrigin, checkLabel, utf8, type SessionOriginCode } from '../protocol/index.ts';
import { isSessionUnitName, sessionIdOf } from '../systemd/index.ts';
import type { KeptFacts } from '../control/index.ts';

/** The record's format; a record of another format is not adopted (its session is reaped, logged). */
export const RECORD_FORMAT = 1;

/** The facts the broker learns at the start (KeptFacts), and what only the record keeps. */
export interface KeptRecord extends KeptFacts {
  format: typeof RECORD_FORMAT;
  unit: string;
  retainBytes: number;
  /** The client service the session's peer was confirmed inside (the principals' scope), or null. */
  service: string | null;
  /** Unix ms since which no connection is attached; null while one is. */
  detachedSinceMs: number | null;
}

const MAX_TEXT = 4096;
const MAX_KEEP_MS = 0x7fff_ffff;
const MIN_RETAIN = 4096;
const MAX_RETAIN = 64 << 20;

const int = (value: unknown, min: number, max: number): value is number => Number.isSafeInteger(value) && (value as number) >= min && (value as number) <= max;
const text = (value: unknown, max: number): value is string => typeof value === 'string' && value.length <= max && !value.includes('\0') && !/\p{Cs}/u.test(value);

/** A label LIST and ATTACHED can carry: the protocol's own rule (its UTF-8 bytes, no control character),
 * so a record that passes here never makes the answer that shows it fail (docs/protocol.md "START"). */
function label(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  try {
    checkLabel(value, utf8('label', value).length);
    return true;
  } catch {
    return false;
  }
}

/** The record of `unit`'s session, or why it cannot be taken (a reason for the journal line). */
export function parseRecord(json: string, unit: string, prefix: string): { record: KeptRecord } | { why: string } {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return { why: 'its record is not JSON' };
  }
  return checkRecord(value, unit, prefix);
}

/** parseRecord's checks on a value already parsed (an ended session's record carries one: ended-record.ts). */
export function checkRecord(value: unknown, unit: string, prefix: string): { record: KeptRecord } | { why: string } {
  if (typeof value !== 'object' || value === null) return { why: 'its record is not an object' };
  const r = value as Record<string, unknown>;
  if (r.format !== RECORD_FORMAT) return { why: `its record is of format ${JSON.stringify(r.format)}, not ${RECORD_FORMAT}` };
  if (r.unit !== unit || !isSessionUnitName(unit, prefix)) return { why: 'its record names another unit' };
  if (r.sessionId !== sessionIdOf(unit, prefix)) return { why: "its record's id is not its unit's" };
  const fields: [string, boolean][] = [
    ['keepMs', int(r.keepMs, 1, MAX_KEEP_MS)],
    ['retainBytes', int(r.retainBytes, MIN_RETAIN, MAX_RETAIN)],
    ['label', label(r.label)],
    ['program', text(r.program, MAX_TEXT)],
    ['cwd', text(r.cwd, MAX_TEXT)],
    ['startedAtMs', int(r.startedAtMs, 0, Number.MAX_SAFE_INTEGER)],
    ['rows', int(r.rows, 1, 0xffff)],
    ['cols', int(r.cols, 1, 0xffff)],
    ['programPid', int(r.programPid, 0, 0xffff_ffff)],
    ['mainPid', int(r.mainPid, 0, 0xffff_ffff)],
    ['origin', Object.values(SessionOrigin).includes(r.origin as SessionOriginCode)],
    ['service', r.service === null || text(r.service, 256)],
    ['detachedSinceMs', r.detachedSinceMs === null || int(r.detachedSinceMs, 0, Number.MAX_SAFE_INTEGER)],
  ];
  const bad = fields.find(([, ok]) => !ok);
  if (bad) return { why: `its record's ${bad[0]} is not valid` };
  // A record of its own, with the known fields alone: nothing else in the file goes on with it.
  const record: KeptRecord = {
    format: RECORD_FORMAT,
    unit,
    sessionId: r.sessionId as number,
    keepMs: r.keepMs as number,
    retainBytes: r.retainBytes as number,
    label: r.label as string,
    program: r.program as string,
    cwd: r.cwd as string,
    startedAtMs: r.startedAtMs as number,
    rows: r.rows as number,
    cols: r.cols as number,
    programPid: r.programPid as number,
    mainPid: r.mainPid as number,
    origin: r.origin as SessionOriginCode,
    service: r.service as string | null,
    detachedSinceMs: r.detachedSinceMs as number | null,
  };
  return { record };
}

/** The record as this supervisor holds it: its keep no longer than `session.maxKeepMs` says now (a lower
 * limit since the session started applies to it from its adoption on; a higher one does not lengthen it). */
export function boundKeep(record: KeptRecord, maxKeepMs: number): KeptRecord {
  // At least 1 ms (session.maxKeepMs may be 0): the record written back must still parse.
  const keepMs = Math.max(1, maxKeepMs);
  return record.keepMs <= keepMs ? record : { ...record, keepMs };
}

/**
 * When an adopted session ends if nobody attaches: `keepMs` after it was left, as recorded. A session
 * the record says was attached when its supervisor went lost that connection then (the helper lets
 * every connection go with its worker), at a moment root did not record: it is counted as left at its
 * adoption, so it gets its whole keep from then, never less than it was promised.
 */
export function adoptionDeadline(record: Pick<KeptRecord, 'keepMs' | 'detachedSinceMs'>, adoptedAtMs: number): number {
  return (record.detachedSinceMs ?? adoptedAtMs) + record.keepMs;
}
