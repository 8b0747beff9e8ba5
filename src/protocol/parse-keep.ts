// Parsers of version 3's frames (kept sessions: docs/protocol.md "Version 3"), as strict as every other.
import { ErrorCode, FrameType, Limits, type FrameTypeCode } from './constants.ts';
import type { Frame, RoleCode, SessionEntry, SessionOriginCode, SessionStateCode } from './frames.ts';
import { BufferReader } from './buffer-reader.ts';
import { ProtocolError } from './errors.ts';
import {
  checkExit,
  checkFromOffset,
  checkInteger,
  checkKeep,
  checkLabel,
  checkOffsets,
  checkRole,
  checkTerminalSize,
  checkToken,
  checkTruncated,
  safeNumber,
} from './rules.ts';

/** A frame that exists only in version 3, or undefined for any other type byte. */
export function parseKeepFrame(type: FrameTypeCode, payload: Buffer): Frame | undefined {
  switch (type) {
    case FrameType.LIST:
      return { type: 'list' };
    case FrameType.SESSIONS:
      return parseSessions(new BufferReader(payload));
    case FrameType.ATTACH: {
      const reader = new BufferReader(payload);
      const id = readSessionId(reader);
      const fromOffset = reader.u64('fromOffset');
      checkFromOffset(fromOffset);
      const role = readRole(reader);
      const { rows, cols } = readTerminalSize(reader);
      return { type: 'attach', id, fromOffset, role, rows, cols };
    }
    case FrameType.ATTACHED:
      return parseAttached(new BufferReader(payload));
    case FrameType.TRUNCATED: {
      const reader = new BufferReader(payload);
      const oldest = reader.u64('oldest');
      const dropped = reader.u64('dropped');
      checkTruncated(oldest, dropped);
      return { type: 'truncated', oldest, dropped };
    }
    case FrameType.CONTROLLER_CHANGED: {
      const reader = new BufferReader(payload);
      const generation = reader.u32('generation');
      checkInteger('generation', generation, 1, 0xffff_ffff);
      return { type: 'controller-changed', generation, role: readRole(reader) };
    }
    case FrameType.STOP_SESSION:
      return { type: 'stop-session', id: readSessionId(new BufferReader(payload)) };
    default:
      return undefined;
  }
}

/** START v3's keep fields, after the environment (the reader carries BAD_START). */
export function readStartKeep(reader: BufferReader): { keepMs: number; retainBytes: number; label: string } {
  const keepMs = reader.u32('keepMs');
  const retainBytes = reader.u32('retainBytes');
  checkKeep(keepMs, retainBytes);
  const label = readLabel(reader, ErrorCode.BAD_START);
  return { keepMs, retainBytes, label };
}

/** A terminal size, rows then cols (u16 each), as START, RESIZE, ATTACH and a SESSIONS entry carry it. */
export function readTerminalSize(reader: BufferReader, wireCode?: number): { rows: number; cols: number } {
  const rows = reader.u16('rows');
  const cols = reader.u16('cols');
  checkTerminalSize(rows, cols, wireCode);
  return { rows, cols };
}

/** The session's processes and unit, as STARTED (version 2 on) and ATTACHED carry them. */
export function readSessionUnit(reader: BufferReader): { programPid: number; mainPid: number; unit: string } {
  const programPid = reader.u32('programPid');
  checkInteger('programPid', programPid, 1, 0xffff_ffff);
  const mainPid = reader.u32('mainPid');
  checkInteger('mainPid', mainPid, 1, 0xffff_ffff);
  const unitSize = reader.u16('unit name length');
  const unit = reader.latin1(unitSize, 'unit name');
  checkToken('unit name', unit, Limits.MAX_UNIT_NAME);
  return { programPid, mainPid, unit };
}

/** A session id: 1..2^53-1 (a u64 on the wire). */
export function readSessionId(reader: BufferReader, what = 'session id'): number {
  const id = safeNumber(what, reader.u64(what));
  if (id === 0) throw new ProtocolError('BAD_VALUE', `${what} 0 is never valid`);
  return id;
}

function readRole(reader: BufferReader): RoleCode {
  const role = reader.u8('role');
  checkRole(role);
  return role as RoleCode;
}

function readLabel(reader: BufferReader, wireCode?: number): string {
  const size = reader.u16('label length');
  if (size > Limits.MAX_LABEL) throw new ProtocolError('OVERSIZE', `label of ${size} bytes exceeds ${Limits.MAX_LABEL}`, wireCode);
  const label = reader.utf8(size, 'label');
  checkLabel(label, size, wireCode);
  return label;
}

function readText(reader: BufferReader, what: string, max: number): string {
  const size = reader.u16(`${what} length`);
  if (size > max) throw new ProtocolError('OVERSIZE', `${what} of ${size} bytes exceeds ${max}`);
  return reader.utf8(size, what);
}

function parseAttached(reader: BufferReader): Frame {
  const id = readSessionId(reader);
  const role = readRole(reader);
  const generation = reader.u32('generation');
  checkInteger('generation', generation, 1, 0xffff_ffff);
  const oldest = reader.u64('oldest');
  const next = reader.u64('next');
  checkOffsets(oldest, next, 'ATTACHED');
  const { programPid, mainPid, unit } = readSessionUnit(reader);
  reader.end('ATTACHED');
  return { type: 'attached', id, role, generation, oldest, next, programPid, mainPid, unit };
}

function parseSessions(reader: BufferReader): Frame {
  const count = reader.u16('count');
  const sessions: SessionEntry[] = [];
  for (let i = 0; i < count; i++) sessions.push(parseEntry(reader, `entry ${i}`));
  reader.end('SESSIONS');
  const ids = new Set(sessions.map((entry) => entry.id));
  if (ids.size !== sessions.length) throw new ProtocolError('BAD_VALUE', 'SESSIONS lists a session id twice');
  return { type: 'sessions', sessions };
}

function parseEntry(reader: BufferReader, what: string): SessionEntry {
  const id = readSessionId(reader, `${what} id`);
  const state = reader.u8('state');
  checkInteger(`${what} state`, state, 1, 6);
  const controllers = reader.u8('controllers');
  checkInteger(`${what} controllers`, controllers, 0, 1);
  const observers = reader.u8('observers');
  const { rows, cols } = readTerminalSize(reader);
  const programPid = reader.u32('programPid');
  const mainPid = reader.u32('mainPid');
  const startedAtMs = safeNumber(`${what} startedAtMs`, reader.u64('startedAtMs'));
  const keepMs = reader.u32('keepMs');
  const deadlineMs = safeNumber(`${what} deadlineMs`, reader.u64('deadlineMs'));
  const oldest = reader.u64('oldest');
  const next = reader.u64('next');
  checkOffsets(oldest, next, what);
  const fresh = reader.u8('fresh');
  checkInteger(`${what} fresh`, fresh, 0, 1);
  const endCode = reader.u8('endCode');
  const endStatus = reader.i32('endStatus');
  checkExit(endCode, endStatus);
  const origin = reader.u8('origin');
  checkInteger(`${what} origin`, origin, 1, 3);
  const label = readLabel(reader);
  const program = readText(reader, 'program', Limits.MAX_LIST_PROGRAM);
  const cwd = readText(reader, 'cwd', Limits.MAX_LIST_CWD);
  return {
    id,
    state: state as SessionStateCode,
    controllers,
    observers,
    rows,
    cols,
    programPid,
    mainPid,
    startedAtMs,
    keepMs,
    deadlineMs,
    oldest,
    next,
    fresh: fresh === 1,
    endCode,
    endStatus,
    origin: origin as SessionOriginCode,
    label,
    program,
    cwd,
  };
}
