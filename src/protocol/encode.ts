// The encoder: one frame → one buffer, refusing (with the decoder's own rules) anything a peer would reject.
import { ErrorCode, HELLO_MAGIC, HEADER_SIZE, Limits } from './constants.ts';
import { ACCOUNTING_FIELDS, type Accounting, type Frame, type FrameOf, type ProgramEnd } from './frames.ts';
import { BufferWriter } from './buffer-writer.ts';
import { ProtocolError } from './errors.ts';
import { END_FIXED_SIZE, checkPayloadLength, layoutOf, typeCodeOf } from './layout.ts';
import {
  checkArgument,
  checkCount,
  checkEnvName,
  checkEnvUnique,
  checkExit,
  checkInteger,
  checkNoNul,
  checkStringSize,
  checkTerminalSize,
  checkToken,
  checkU64,
  checkVersionRange,
  utf8,
} from './rules.ts';
import { encodeStartSandbox } from './start-sandbox.ts';
import { encodeKeepFrame, encodeStartKeep, encodeStartedKeep } from './encode-keep.ts';

/** Largest ERROR text in bytes: the payload limit less the u16 code. */
export const MAX_ERROR_TEXT = Limits.MAX_IO_PAYLOAD - 2;

/** Header and payload of `frame` in one buffer, laid out as `version` lays it out. Throws ProtocolError for
 * a frame a decoder of that version would refuse. */
export function encodeFrame(frame: Frame, version = 1): Buffer {
  const type = typeCodeOf(frame.type);
  const layout = layoutOf(type, version);
  if (layout === undefined) throw new ProtocolError('UNKNOWN_TYPE', `${frame.type.toUpperCase()} does not exist in version ${version}`);
  const payload =
    (version >= 4 && frame.type === 'start' ? encodeStartSandbox(frame, encodeStartKeep(frame, encodeStart(frame))) : undefined) ??
    (version >= 3 ? encodePayloadV3(frame) : undefined) ??
    (version >= 2 ? encodePayloadV2(frame) : undefined) ??
    encodeKeepFrame(frame) ??
    encodePayload(frame);
  checkPayloadLength(layout, payload.length);
  const out = Buffer.allocUnsafe(HEADER_SIZE + payload.length);
  out.writeUInt8(type, 0);
  out.writeUInt32BE(payload.length, 1);
  payload.copy(out, HEADER_SIZE);
  return out;
}

/**
 * An ERROR frame whose text always fits: lone surrogates become U+FFFD and the text is cut to
 * MAX_ERROR_TEXT bytes at a character boundary, so the result is valid UTF-8 a decoder accepts.
 */
export function errorFrame(code: number, message: string): FrameOf<'error'> {
  checkInteger('ERROR code', code, 1, 0xffff);
  const text = Buffer.from(String(message).replace(/\p{Cs}/gu, '\uFFFD'), 'utf8');
  if (text.length <= MAX_ERROR_TEXT) return { type: 'error', code, message: text.toString('utf8') };
  let cut = MAX_ERROR_TEXT;
  // A byte 10xxxxxx continues a character that began earlier: cut before that character instead.
  while (cut > 0 && (text[cut]! & 0xc0) === 0x80) cut--;
  return { type: 'error', code, message: text.subarray(0, cut).toString('utf8') };
}

function encodePayload(frame: Frame): Buffer {
  switch (frame.type) {
    case 'hello':
      checkVersionRange(frame.minVersion, frame.maxVersion);
      return new BufferWriter(8).u32(HELLO_MAGIC).u16(frame.minVersion).u16(frame.maxVersion).finish();
    case 'welcome':
      checkInteger('version', frame.version, 1, 0xffff);
      return new BufferWriter(2).u16(frame.version).finish();
    case 'start':
      return encodeStart(frame);
    case 'started': {
      checkInteger('mainPid', frame.mainPid, 1, 0xffff_ffff);
      checkToken('unit name', frame.unit, Limits.MAX_UNIT_NAME);
      const unit = Buffer.from(frame.unit, 'latin1');
      return new BufferWriter(4 + unit.length).u32(frame.mainPid).bytes(unit).finish();
    }
    case 'input':
    case 'output':
      if (!(frame.data instanceof Uint8Array)) {
        throw new ProtocolError('BAD_VALUE', `${frame.type.toUpperCase()} data is not a Buffer`);
      }
      return Buffer.from(frame.data.buffer, frame.data.byteOffset, frame.data.byteLength);
    case 'resize':
      checkTerminalSize(frame.rows, frame.cols);
      return new BufferWriter(4).u16(frame.rows).u16(frame.cols).finish();
    case 'signal':
      checkInteger('signal', frame.signal, 1, Limits.MAX_SIGNAL);
      return new BufferWriter(1).u8(frame.signal).finish();
    case 'stop':
    case 'stopped':
    case 'end-input':
      return Buffer.alloc(0);
    case 'exit': {
      checkExit(frame.code, frame.status);
      checkToken('result', frame.result, Limits.MAX_RESULT);
      const result = Buffer.from(frame.result, 'latin1');
      return new BufferWriter(9 + result.length).u8(frame.code).i32(frame.status).u32(result.length).bytes(result).finish();
    }
    case 'error': {
      checkInteger('ERROR code', frame.code, 1, 0xffff);
      const text = utf8('ERROR text', frame.message);
      if (text.length > MAX_ERROR_TEXT) {
        throw new ProtocolError('OVERSIZE', `ERROR text of ${text.length} bytes exceeds ${MAX_ERROR_TEXT}`);
      }
      return new BufferWriter(2 + text.length).u16(frame.code).bytes(text).finish();
    }
    case 'credit':
      checkInteger('credit', frame.bytes, 1, Limits.MAX_WINDOW);
      return new BufferWriter(4).u32(frame.bytes).finish();
    default:
      throw new ProtocolError('UNKNOWN_TYPE', `unknown frame type ${JSON.stringify((frame as { type: unknown }).type)}`);
  }
}

/** START and STARTED as version 3 lays them out (version 2's, then their keep fields), else undefined. */
function encodePayloadV3(frame: Frame): Buffer | undefined {
  if (frame.type === 'start') return encodeStartKeep(frame, encodeStart(frame));
  if (frame.type === 'started') return encodeStartedKeep(frame, encodeStartedV2(frame));
  return undefined;
}

/** The frames version 2 lays out differently, or undefined for one it keeps as version 1 has it. */
function encodePayloadV2(frame: Frame): Buffer | undefined {
  switch (frame.type) {
    case 'started':
      return encodeStartedV2(frame);
    case 'exit':
      if (!frame.accounting) throw new ProtocolError('BAD_VALUE', 'EXIT in version 2 needs its end record (accounting)');
      return encodeEnd(frame, frame.accounting);
    case 'stopped':
      if (!frame.end) throw new ProtocolError('BAD_VALUE', "STOPPED in version 2 needs the program's end and the end record");
      return encodeEnd(frame.end, frame.end.accounting);
    default:
      return undefined;
  }
}

function encodeStartedV2(frame: FrameOf<'started'>): Buffer {
  const { programPid, droppedEnv } = frame;
  if (programPid === undefined || droppedEnv === undefined) {
    throw new ProtocolError('BAD_VALUE', 'STARTED in version 2 needs programPid and droppedEnv');
  }
  checkInteger('programPid', programPid, 1, 0xffff_ffff);
  checkInteger('mainPid', frame.mainPid, 1, 0xffff_ffff);
  checkToken('unit name', frame.unit, Limits.MAX_UNIT_NAME);
  checkCount('dropped', droppedEnv.length, 0, Limits.MAX_ENVC);
  const names = droppedEnv.map((name, i) => {
    checkEnvName(name);
    return startString(`dropped[${i}]`, name);
  });
  checkEnvUnique(droppedEnv);
  const unit = Buffer.from(frame.unit, 'latin1');
  const size = 12 + unit.length + names.reduce((sum, name) => sum + 4 + name.length, 0);
  if (size > Limits.MAX_FRAME_PAYLOAD) {
    throw new ProtocolError('OVERSIZE', `STARTED payload of ${size} bytes exceeds ${Limits.MAX_FRAME_PAYLOAD}`);
  }
  const writer = new BufferWriter(size).u32(programPid).u32(frame.mainPid).u16(unit.length).bytes(unit).u16(names.length);
  for (const name of names) writer.u32(name.length).bytes(name);
  return writer.finish();
}

function encodeEnd(end: ProgramEnd, accounting: Accounting): Buffer {
  checkExit(end.code, end.status);
  checkToken('result', end.result, Limits.MAX_RESULT);
  const result = Buffer.from(end.result, 'latin1');
  const writer = new BufferWriter(END_FIXED_SIZE + result.length).u8(end.code).i32(end.status);
  for (const field of ACCOUNTING_FIELDS) {
    const value = accounting[field];
    if (value === null) writer.u64(Limits.UNAVAILABLE);
    else {
      checkInteger(field, value, 0, Number.MAX_SAFE_INTEGER);
      writer.u64(BigInt(value));
    }
  }
  return writer.u32(result.length).bytes(result).finish();
}

function encodeStart(frame: FrameOf<'start'>): Buffer {
  const wire = ErrorCode.BAD_START;
  checkTerminalSize(frame.rows, frame.cols, wire);
  checkU64('cwdDev', frame.cwdDev, wire);
  checkU64('cwdIno', frame.cwdIno, wire);
  checkCount('argv', frame.argv.length, 1, Limits.MAX_ARGC);
  checkCount('env', frame.env.length, 0, Limits.MAX_ENVC);
  const argv = frame.argv.map((value, i) => {
    checkArgument(i, value);
    return startString(`argv[${i}]`, value);
  });
  const env = frame.env.map(({ name, value }, i) => {
    checkEnvName(name);
    checkNoNul(`env[${i}] value`, value, wire);
    return [startString(`env[${i}] name`, name), startString(`env[${i}] value`, value)] as const;
  });
  checkEnvUnique(frame.env.map((entry) => entry.name));
  let size = 24;
  for (const value of argv) size += 4 + value.length;
  for (const [name, value] of env) size += 8 + name.length + value.length;
  if (size > Limits.MAX_FRAME_PAYLOAD) {
    throw new ProtocolError('OVERSIZE', `START payload of ${size} bytes exceeds ${Limits.MAX_FRAME_PAYLOAD}`, wire);
  }
  const writer = new BufferWriter(size)
    .u16(frame.rows)
    .u16(frame.cols)
    .u64(frame.cwdDev)
    .u64(frame.cwdIno)
    .u16(argv.length)
    .u16(env.length);
  for (const value of argv) writer.u32(value.length).bytes(value);
  for (const [name, value] of env) writer.u32(name.length).bytes(name).u32(value.length).bytes(value);
  return writer.finish();
}

function startString(what: string, value: string): Buffer {
  const bytes = utf8(what, value, ErrorCode.BAD_START);
  checkStringSize(what, bytes.length);
  return bytes;
}

