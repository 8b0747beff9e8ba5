// Per frame type: who may send it and how long its payload may be; the header check built on that.
import { FrameType, HEADER_SIZE, Limits, type FrameTypeCode } from './constants.ts';
import type { Direction, FrameName } from './frames.ts';
import { ProtocolError } from './errors.ts';

export interface FrameLayout {
  name: FrameName;
  /** The direction the frame travels; 'both' for CREDIT. */
  direction: Direction | 'both';
  /** Smallest and largest payload in bytes; equal for fixed-size frames. */
  min: number;
  max: number;
  /** The first protocol version with this frame (1 when absent). */
  since?: number;
}

/** Fixed part of START: rows u16, cols u16, cwdDev u64, cwdIno u64, argc u16, envc u16. */
export const START_FIXED_SIZE = 24;
/** Fixed part of EXIT: code u8, status i32, resultLen u32. */
export const EXIT_FIXED_SIZE = 9;
/** Fixed part of STARTED: mainPid u32. */
export const STARTED_FIXED_SIZE = 4;
/** Fixed part of ERROR: code u16. */
export const ERROR_FIXED_SIZE = 2;
/** Version 2's end record: eight u64 figures (Accounting). */
export const ACCOUNTING_SIZE = 64;
/** Version 2's EXIT and STOPPED: code u8, status i32, the end record, resultLen u32. */
export const END_FIXED_SIZE = EXIT_FIXED_SIZE + ACCOUNTING_SIZE;
/** Version 2's STARTED: programPid u32, mainPid u32, unitLen u16, (unit), droppedCount u16. */
export const STARTED_V2_FIXED_SIZE = 12;
/** Version 3's STARTED: version 2's, then sessionId u64. */
export const STARTED_V3_FIXED_SIZE = STARTED_V2_FIXED_SIZE + 8;
/** Version 3's START adds, after the environment: keepMs u32, retainBytes u32, labelLen u16, (label). */
export const START_KEEP_SIZE = 10;
/** ATTACH: id u64, fromOffset u64, role u8, rows u16, cols u16. */
export const ATTACH_SIZE = 21;
/** ATTACHED's fixed part: id u64, role u8, generation u32, oldest u64, next u64, programPid u32, mainPid u32, unitLen u16. */
export const ATTACHED_FIXED_SIZE = 39;
/** One SESSIONS entry without its three strings (docs/protocol.md "SESSIONS"). */
export const SESSION_ENTRY_FIXED_SIZE = 72;

export const LAYOUT: Readonly<Record<FrameTypeCode, FrameLayout>> = {
  [FrameType.HELLO]: { name: 'hello', direction: 'to-server', min: 8, max: 8 },
  [FrameType.WELCOME]: { name: 'welcome', direction: 'to-client', min: 2, max: 2 },
  [FrameType.START]: {
    name: 'start',
    direction: 'to-server',
    // argv is never empty, so at least one length prefix follows the fixed part.
    min: START_FIXED_SIZE + 4,
    max: Limits.MAX_FRAME_PAYLOAD,
  },
  [FrameType.STARTED]: {
    name: 'started',
    direction: 'to-client',
    min: STARTED_FIXED_SIZE + 1,
    max: STARTED_FIXED_SIZE + Limits.MAX_UNIT_NAME,
  },
  [FrameType.INPUT]: { name: 'input', direction: 'to-server', min: 1, max: Limits.MAX_IO_PAYLOAD },
  [FrameType.OUTPUT]: { name: 'output', direction: 'to-client', min: 1, max: Limits.MAX_IO_PAYLOAD },
  [FrameType.RESIZE]: { name: 'resize', direction: 'to-server', min: 4, max: 4 },
  [FrameType.SIGNAL]: { name: 'signal', direction: 'to-server', min: 1, max: 1 },
  [FrameType.STOP]: { name: 'stop', direction: 'to-server', min: 0, max: 0 },
  [FrameType.STOPPED]: { name: 'stopped', direction: 'to-client', min: 0, max: 0 },
  [FrameType.EXIT]: {
    name: 'exit',
    direction: 'to-client',
    min: EXIT_FIXED_SIZE + 1,
    max: EXIT_FIXED_SIZE + Limits.MAX_RESULT,
  },
  [FrameType.ERROR]: {
    name: 'error',
    direction: 'to-client',
    min: ERROR_FIXED_SIZE,
    max: Limits.MAX_IO_PAYLOAD,
  },
  [FrameType.CREDIT]: { name: 'credit', direction: 'both', min: 4, max: 4 },
  [FrameType.END_INPUT]: { name: 'end-input', direction: 'to-server', min: 0, max: 0, since: 2 },
  // Version 3: LIST, ATTACH and STOP_SESSION are requests sent instead of START, answered before any data phase.
  [FrameType.LIST]: { name: 'list', direction: 'to-server', min: 0, max: 0, since: 3 },
  // A count u16, then the entries; the server leaves out entries that would not fit.
  [FrameType.SESSIONS]: { name: 'sessions', direction: 'to-client', min: 2, max: Limits.MAX_FRAME_PAYLOAD, since: 3 },
  [FrameType.ATTACH]: { name: 'attach', direction: 'to-server', min: ATTACH_SIZE, max: ATTACH_SIZE, since: 3 },
  [FrameType.ATTACHED]: {
    name: 'attached',
    direction: 'to-client',
    min: ATTACHED_FIXED_SIZE + 1,
    max: ATTACHED_FIXED_SIZE + Limits.MAX_UNIT_NAME,
    since: 3,
  },
  [FrameType.TRUNCATED]: { name: 'truncated', direction: 'to-client', min: 16, max: 16, since: 3 },
  [FrameType.CONTROLLER_CHANGED]: { name: 'controller-changed', direction: 'to-client', min: 5, max: 5, since: 3 },
  [FrameType.STOP_SESSION]: { name: 'stop-session', direction: 'to-server', min: 8, max: 8, since: 3 },
};

/** What version 2 lays out differently; every other frame keeps its version 1 layout. */
const LAYOUT_V2: Readonly<Partial<Record<FrameTypeCode, FrameLayout>>> = {
  [FrameType.STARTED]: {
    name: 'started',
    direction: 'to-client',
    // The unit name is never empty; the dropped names are bounded by START, which named them.
    min: STARTED_V2_FIXED_SIZE + 1,
    max: Limits.MAX_FRAME_PAYLOAD,
  },
  [FrameType.STOPPED]: { name: 'stopped', direction: 'to-client', min: END_FIXED_SIZE + 1, max: END_FIXED_SIZE + Limits.MAX_RESULT },
  [FrameType.EXIT]: { name: 'exit', direction: 'to-client', min: END_FIXED_SIZE + 1, max: END_FIXED_SIZE + Limits.MAX_RESULT },
};

/** What version 3 lays out differently from version 2 (START and STARTED grow; the rest as version 2). */
const LAYOUT_V3: Readonly<Partial<Record<FrameTypeCode, FrameLayout>>> = {
  [FrameType.START]: {
    name: 'start',
    direction: 'to-server',
    min: START_FIXED_SIZE + 4 + START_KEEP_SIZE,
    max: Limits.MAX_FRAME_PAYLOAD,
  },
  [FrameType.STARTED]: {
    name: 'started',
    direction: 'to-client',
    min: STARTED_V3_FIXED_SIZE + 1,
    max: Limits.MAX_FRAME_PAYLOAD,
  },
};

/** Version 4's START adds, after version 3's label: profileLen u8, (profile), network u8, budget flags u8, four u64 budgets. */
export const START_SANDBOX_SIZE = 35;

/** What version 4 lays out differently from version 3: START grows; everything else as version 3. */
const LAYOUT_V4: Readonly<Partial<Record<FrameTypeCode, FrameLayout>>> = {
  [FrameType.START]: {
    name: 'start',
    direction: 'to-server',
    min: START_FIXED_SIZE + 4 + START_KEEP_SIZE + START_SANDBOX_SIZE,
    max: Limits.MAX_FRAME_PAYLOAD,
  },
};

const CODE_OF_NAME = Object.fromEntries(
  Object.entries(LAYOUT).map(([code, layout]) => [layout.name, Number(code)]),
) as Record<FrameName, FrameTypeCode>;

export function typeCodeOf(name: FrameName): FrameTypeCode {
  return CODE_OF_NAME[name];
}

/** The layout of a type byte in a protocol version, or undefined for a byte that names no frame there. */
export function layoutOf(type: number, version = 1): FrameLayout | undefined {
  if (!Object.hasOwn(LAYOUT, type)) return undefined;
  const code = type as FrameTypeCode;
  const layout =
    (version >= 4 ? LAYOUT_V4[code] : undefined) ?? (version >= 3 ? LAYOUT_V3[code] : undefined) ?? (version >= 2 ? LAYOUT_V2[code] : undefined) ?? LAYOUT[code];
  return (layout.since ?? 1) <= version ? layout : undefined;
}

export function mayTravel(layout: FrameLayout, direction: Direction): boolean {
  return layout.direction === 'both' || layout.direction === direction;
}

/** Throws unless `length` is a payload size the layout allows. */
export function checkPayloadLength(layout: FrameLayout, length: number): void {
  if (length >= layout.min && length <= layout.max) return;
  const name = layout.name.toUpperCase();
  if (layout.min === layout.max) {
    throw new ProtocolError('BAD_LENGTH', `${name} payload must be ${layout.min} bytes, not ${length}`);
  }
  if (length > layout.max) {
    throw new ProtocolError('OVERSIZE', `${name} payload of ${length} bytes exceeds ${layout.max}`);
  }
  throw new ProtocolError('BAD_LENGTH', `${name} payload of ${length} bytes is below ${layout.min}`);
}

/**
 * Reads and checks a frame header (buf holds at least HEADER_SIZE bytes), so a bad type, direction
 * or length is refused before a byte of its payload is buffered.
 */
export function parseHeader(buf: Buffer, direction: Direction, version = 1): { type: FrameTypeCode; length: number } {
  if (buf.length < HEADER_SIZE) {
    throw new RangeError(`a header needs ${HEADER_SIZE} bytes, got ${buf.length}`);
  }
  const type = buf.readUInt8(0);
  const length = buf.readUInt32BE(1);
  const layout = layoutOf(type, version);
  if (layout === undefined) {
    throw new ProtocolError('UNKNOWN_TYPE', `unknown frame type 0x${type.toString(16).padStart(2, '0')} in version ${version}`);
  }
  if (!mayTravel(layout, direction)) {
    throw new ProtocolError('WRONG_DIRECTION', `${layout.name.toUpperCase()} may not be sent ${direction}`);
  }
  checkPayloadLength(layout, length);
  return { type: type as FrameTypeCode, length };
}
