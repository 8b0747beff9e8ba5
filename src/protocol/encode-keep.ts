// Version 3's frames (kept sessions: docs/protocol.md "Version 3"), and the keep fields START and STARTED gain.
import { ErrorCode, Limits } from './constants.ts';
import type { Frame, FrameOf, SessionEntry } from './frames.ts';
import { BufferWriter } from './buffer-writer.ts';
import { ProtocolError } from './errors.ts';
import { ATTACHED_FIXED_SIZE, ATTACH_SIZE, SESSION_ENTRY_FIXED_SIZE, START_KEEP_SIZE } from './layout.ts';
import {
  checkExit,
  checkFromOffset,
  checkOffsets,
  checkTruncated,
  checkInteger,
  checkKeep,
  checkLabel,
  checkRole,
  checkSessionId,
  checkTerminalSize,
  checkToken,
  utf8,
} from './rules.ts';

/** The payload of a frame that exists only in version 3, or undefined for any other. */
export function encodeKeepFrame(frame: Frame): Buffer | undefined {
  switch (frame.type) {
    case 'list':
      return Buffer.alloc(0);
    case 'sessions':
      return encodeSessions(frame.sessions);
    case 'attach':
      checkSessionId('session id', frame.id);
      checkFromOffset(frame.fromOffset);
      checkRole(frame.role);
      checkTerminalSize(frame.rows, frame.cols);
      return new BufferWriter(ATTACH_SIZE).u64(BigInt(frame.id)).u64(frame.fromOffset).u8(frame.role).u16(frame.rows).u16(frame.cols).finish();
    case 'attached':
      return encodeAttached(frame);
    case 'truncated':
      checkTruncated(frame.oldest, frame.dropped);
      return new BufferWriter(16).u64(frame.oldest).u64(frame.dropped).finish();
    case 'controller-changed':
      checkInteger('generation', frame.generation, 1, 0xffff_ffff);
      checkRole(frame.role);
      return new BufferWriter(5).u32(frame.generation).u8(frame.role).finish();
    case 'stop-session':
      checkSessionId('session id', frame.id);
      return new BufferWriter(8).u64(BigInt(frame.id)).finish();
    default:
      return undefined;
  }
}

/** START v3: the version 2 body, then keepMs, retainBytes and the label. */
export function encodeStartKeep(frame: FrameOf<'start'>, body: Buffer): Buffer {
  const { keepMs = 0, retainBytes = 0, label = '' } = frame;
  checkKeep(keepMs, retainBytes);
  const text = utf8('label', label, ErrorCode.BAD_START);
  checkLabel(label, text.length, ErrorCode.BAD_START);
  const size = body.length + START_KEEP_SIZE + text.length;
  if (size > Limits.MAX_FRAME_PAYLOAD) {
    throw new ProtocolError('OVERSIZE', `START payload of ${size} bytes exceeds ${Limits.MAX_FRAME_PAYLOAD}`, ErrorCode.BAD_START);
  }
  return new BufferWriter(size).bytes(body).u32(keepMs).u32(retainBytes).u16(text.length).bytes(text).finish();
}

/** STARTED v3: the version 2 body, then the session id. */
export function encodeStartedKeep(frame: FrameOf<'started'>, body: Buffer): Buffer {
  if (frame.sessionId === undefined) throw new ProtocolError('BAD_VALUE', 'STARTED in version 3 needs sessionId');
  checkSessionId('session id', frame.sessionId);
  const size = body.length + 8;
  if (size > Limits.MAX_FRAME_PAYLOAD) {
    throw new ProtocolError('OVERSIZE', `STARTED payload of ${size} bytes exceeds ${Limits.MAX_FRAME_PAYLOAD}`);
  }
  return new BufferWriter(size).bytes(body).u64(BigInt(frame.sessionId)).finish();
}

function encodeAttached(frame: FrameOf<'attached'>): Buffer {
  checkSessionId('session id', frame.id);
  checkRole(frame.role);
  checkInteger('generation', frame.generation, 1, 0xffff_ffff);
  checkOffsets(frame.oldest, frame.next, 'ATTACHED');
  checkInteger('programPid', frame.programPid, 1, 0xffff_ffff);
  checkInteger('mainPid', frame.mainPid, 1, 0xffff_ffff);
  checkToken('unit name', frame.unit, Limits.MAX_UNIT_NAME);
  const unit = Buffer.from(frame.unit, 'latin1');
  return new BufferWriter(ATTACHED_FIXED_SIZE + unit.length)
    .u64(BigInt(frame.id))
    .u8(frame.role)
    .u32(frame.generation)
    .u64(frame.oldest)
    .u64(frame.next)
    .u32(frame.programPid)
    .u32(frame.mainPid)
    .u16(unit.length)
    .bytes(unit)
    .finish();
}

/** The encoded entry, or throws for a field a decoder would refuse. */
export function encodeSessionEntry(entry: SessionEntry): Buffer {
  checkSessionId('session id', entry.id);
  checkInteger('state', entry.state, 1, 6);
  checkInteger('controllers', entry.controllers, 0, 1);
  checkInteger('observers', entry.observers, 0, 0xff);
  checkTerminalSize(entry.rows, entry.cols);
  checkInteger('programPid', entry.programPid, 0, 0xffff_ffff);
  checkInteger('mainPid', entry.mainPid, 0, 0xffff_ffff);
  checkInteger('startedAtMs', entry.startedAtMs, 0, Number.MAX_SAFE_INTEGER);
  checkInteger('keepMs', entry.keepMs, 0, 0xffff_ffff);
  checkInteger('deadlineMs', entry.deadlineMs, 0, Number.MAX_SAFE_INTEGER);
  checkOffsets(entry.oldest, entry.next, 'SESSIONS entry');
  checkExit(entry.endCode, entry.endStatus);
  checkInteger('origin', entry.origin, 1, 3);
  const label = utf8('label', entry.label);
  checkLabel(entry.label, label.length);
  const program = utf8('program', entry.program);
  const cwd = utf8('cwd', entry.cwd);
  if (program.length > Limits.MAX_LIST_PROGRAM) throw new ProtocolError('OVERSIZE', `program of ${program.length} bytes exceeds ${Limits.MAX_LIST_PROGRAM}`);
  if (cwd.length > Limits.MAX_LIST_CWD) throw new ProtocolError('OVERSIZE', `cwd of ${cwd.length} bytes exceeds ${Limits.MAX_LIST_CWD}`);
  return new BufferWriter(SESSION_ENTRY_FIXED_SIZE + label.length + program.length + cwd.length)
    .u64(BigInt(entry.id))
    .u8(entry.state)
    .u8(entry.controllers)
    .u8(entry.observers)
    .u16(entry.rows)
    .u16(entry.cols)
    .u32(entry.programPid)
    .u32(entry.mainPid)
    .u64(BigInt(entry.startedAtMs))
    .u32(entry.keepMs)
    .u64(BigInt(entry.deadlineMs))
    .u64(entry.oldest)
    .u64(entry.next)
    .u8(entry.fresh ? 1 : 0)
    .u8(entry.endCode)
    .i32(entry.endStatus)
    .u8(entry.origin)
    .u16(label.length)
    .bytes(label)
    .u16(program.length)
    .bytes(program)
    .u16(cwd.length)
    .bytes(cwd)
    .finish();
}

function encodeSessions(entries: readonly SessionEntry[]): Buffer {
  const parts = entries.map(encodeSessionEntry);
  const size = parts.reduce((sum, part) => sum + part.length, 2);
  if (parts.length > 0xffff || size > Limits.MAX_FRAME_PAYLOAD) {
    throw new ProtocolError('OVERSIZE', `SESSIONS of ${parts.length} entries (${size} bytes) exceeds ${Limits.MAX_FRAME_PAYLOAD} bytes: use sessionsFrame()`);
  }
  const writer = new BufferWriter(size).u16(parts.length);
  for (const part of parts) writer.bytes(part);
  return writer.finish();
}

/** `text` cut to at most `max` UTF-8 bytes at a character boundary (lone surrogates become U+FFFD). */
export function cutText(text: string, max: number): string {
  const bytes = Buffer.from(String(text).replace(/\p{Cs}/gu, '\uFFFD'), 'utf8');
  if (bytes.length <= max) return bytes.toString('utf8');
  let cut = max;
  // A byte 10xxxxxx continues a character that began earlier: cut before that character instead.
  while (cut > 0 && (bytes[cut]! & 0xc0) === 0x80) cut--;
  return bytes.subarray(0, cut).toString('utf8');
}

/**
 * The SESSIONS frame a server sends: program and cwd cut to their limits, and the entries that would take
 * the payload past MAX_FRAME_PAYLOAD left out (its count says how many are in; docs/protocol.md "SESSIONS").
 * An entry the codec refuses is left out too, told to `refused`: one bad entry never fails the whole LIST.
 */
export function sessionsFrame(entries: readonly SessionEntry[], refused: (entry: SessionEntry, error: Error) => void = () => undefined): FrameOf<'sessions'> {
  const sessions: SessionEntry[] = [];
  let size = 2;
  for (const entry of entries) {
    const cut = { ...entry, program: cutText(entry.program, Limits.MAX_LIST_PROGRAM), cwd: cutText(entry.cwd, Limits.MAX_LIST_CWD) };
    let length: number;
    try {
      length = encodeSessionEntry(cut).length;
    } catch (error) {
      refused(entry, error as Error);
      continue;
    }
    if (size + length > Limits.MAX_FRAME_PAYLOAD || sessions.length === 0xffff) continue;
    size += length;
    sessions.push(cut);
  }
  return { type: 'sessions', sessions };
}
