// Payload parsers for every frame type, strict in every field (the push decoder is in decode.ts).
import { ErrorCode, FrameType, HELLO_MAGIC, Limits, type FrameTypeCode } from './constants.ts';
import { ACCOUNTING_FIELDS, type Accounting, type EnvEntry, type Frame } from './frames.ts';
import { BufferReader } from './buffer-reader.ts';
import { ProtocolError } from './errors.ts';
import { checkPayloadLength, layoutOf } from './layout.ts';
import { readStartSandbox } from './start-sandbox.ts';
import { parseKeepFrame, readSessionId, readSessionUnit, readStartKeep, readTerminalSize } from './parse-keep.ts';
import {
  checkArgument,
  checkCount,
  checkEnvName,
  checkEnvUnique,
  checkExit,
  checkInteger,
  checkNoNul,
  checkStringSize,
  checkToken,
  checkVersionRange,
} from './rules.ts';

/**
 * Parses and validates one payload of the given type. INPUT/OUTPUT data is a copy, so the caller
 * may reuse `payload` afterwards.
 */
export function parsePayload(type: FrameTypeCode, payload: Buffer, version = 1): Frame {
  return parseFrame(type, payload, false, version);
}

/**
 * `owned`: the payload buffer belongs to the decoder and is handed over, so INPUT/OUTPUT may keep
 * it as is; otherwise their data is copied out of the caller's buffer.
 */
export function parseFrame(type: FrameTypeCode, payload: Buffer, owned: boolean, version = 1): Frame {
  const layout = layoutOf(type, version);
  if (layout === undefined) {
    throw new ProtocolError('UNKNOWN_TYPE', `unknown frame type 0x${Number(type).toString(16).padStart(2, '0')} in version ${version}`);
  }
  checkPayloadLength(layout, payload.length);
  switch (type) {
    case FrameType.HELLO:
      return parseHello(new BufferReader(payload));
    case FrameType.WELCOME: {
      const version = new BufferReader(payload).u16('version');
      checkInteger('version', version, 1, 0xffff);
      return { type: 'welcome', version };
    }
    case FrameType.START:
      return parseStart(new BufferReader(payload, ErrorCode.BAD_START), version);
    case FrameType.STARTED:
      return version >= 2 ? parseStartedV2(new BufferReader(payload), version) : parseStarted(new BufferReader(payload));
    case FrameType.INPUT:
      return { type: 'input', data: owned ? payload : copy(payload) };
    case FrameType.OUTPUT:
      return { type: 'output', data: owned ? payload : copy(payload) };
    case FrameType.RESIZE: {
      const { rows, cols } = readTerminalSize(new BufferReader(payload));
      return { type: 'resize', rows, cols };
    }
    case FrameType.SIGNAL: {
      const signal = payload.readUInt8(0);
      checkInteger('signal', signal, 1, Limits.MAX_SIGNAL);
      return { type: 'signal', signal };
    }
    case FrameType.STOP:
      return { type: 'stop' };
    case FrameType.STOPPED: {
      if (version < 2) return { type: 'stopped' };
      const { code, status, result, accounting } = parseEnd(new BufferReader(payload), 'STOPPED');
      return { type: 'stopped', end: { code, status, result, accounting } };
    }
    case FrameType.EXIT:
      if (version >= 2) return { type: 'exit', ...parseEnd(new BufferReader(payload), 'EXIT') };
      return parseExit(new BufferReader(payload));
    case FrameType.END_INPUT:
      return { type: 'end-input' };
    case FrameType.ERROR: {
      const reader = new BufferReader(payload);
      const code = reader.u16('ERROR code');
      // Codes beyond those we know are accepted: a newer server may report reasons we lack names for.
      checkInteger('ERROR code', code, 1, 0xffff);
      return { type: 'error', code, message: reader.utf8(reader.remaining, 'ERROR text') };
    }
    case FrameType.CREDIT: {
      const bytes = payload.readUInt32BE(0);
      checkInteger('credit', bytes, 1, Limits.MAX_WINDOW);
      return { type: 'credit', bytes };
    }
    default: {
      const frame = parseKeepFrame(type, payload);
      if (frame === undefined) throw new ProtocolError('UNKNOWN_TYPE', `no parser for frame type 0x${Number(type).toString(16)}`);
      return frame;
    }
  }
}

/** A private copy of terminal bytes: the caller may reuse the buffer they came in. */
function copy(bytes: Buffer): Buffer {
  const out = Buffer.allocUnsafe(bytes.length);
  bytes.copy(out);
  return out;
}

function parseHello(reader: BufferReader): Frame {
  const magic = reader.u32('magic');
  if (magic !== HELLO_MAGIC) {
    throw new ProtocolError('BAD_VALUE', `HELLO magic 0x${magic.toString(16).padStart(8, '0')} is not "OCPT"`);
  }
  const minVersion = reader.u16('minVersion');
  const maxVersion = reader.u16('maxVersion');
  checkVersionRange(minVersion, maxVersion);
  return { type: 'hello', minVersion, maxVersion };
}

function parseStart(reader: BufferReader, version: number): Frame {
  const { rows, cols } = readTerminalSize(reader, ErrorCode.BAD_START);
  const cwdDev = reader.u64('cwdDev');
  const cwdIno = reader.u64('cwdIno');
  const argc = reader.u16('argc');
  const envc = reader.u16('envc');
  checkCount('argv', argc, 1, Limits.MAX_ARGC);
  checkCount('env', envc, 0, Limits.MAX_ENVC);
  const argv: string[] = [];
  for (let i = 0; i < argc; i++) {
    const value = readString(reader, `argv[${i}]`);
    checkArgument(i, value);
    argv.push(value);
  }
  const env: EnvEntry[] = [];
  for (let i = 0; i < envc; i++) {
    const name = readString(reader, `env[${i}] name`);
    checkEnvName(name);
    const value = readString(reader, `env[${i}] value`);
    checkNoNul(`env[${i}] value`, value, ErrorCode.BAD_START);
    env.push({ name, value });
  }
  checkEnvUnique(env.map((entry) => entry.name));
  const keep = version >= 3 ? readStartKeep(reader) : {};
  const sandbox = version >= 4 ? readStartSandbox(reader) : {};
  reader.end('START');
  return { type: 'start', rows, cols, cwdDev, cwdIno, argv, env, ...keep, ...sandbox };
}

/** A u32 length, bounded by MAX_STRING before anything is read, then that many bytes of UTF-8. */
function readString(reader: BufferReader, what: string): string {
  const size = reader.u32(`${what} length`);
  checkStringSize(what, size);
  return reader.utf8(size, what);
}

function parseStarted(reader: BufferReader): Frame {
  const mainPid = reader.u32('mainPid');
  checkInteger('mainPid', mainPid, 1, 0xffff_ffff);
  const unit = reader.latin1(reader.remaining, 'unit name');
  checkToken('unit name', unit, Limits.MAX_UNIT_NAME);
  return { type: 'started', mainPid, unit };
}

function parseExit(reader: BufferReader): Frame {
  const code = reader.u8('EXIT code');
  const status = reader.i32('EXIT status');
  checkExit(code, status);
  const size = reader.u32('result length');
  if (size > Limits.MAX_RESULT) {
    throw new ProtocolError('OVERSIZE', `result of ${size} bytes exceeds ${Limits.MAX_RESULT}`);
  }
  const result = reader.latin1(size, 'result');
  checkToken('result', result, Limits.MAX_RESULT);
  reader.end('EXIT');
  return { type: 'exit', code, status, result };
}

function parseStartedV2(reader: BufferReader, version: number): Frame {
  const { programPid, mainPid, unit } = readSessionUnit(reader);
  const count = reader.u16('dropped count');
  checkInteger('dropped count', count, 0, Limits.MAX_ENVC);
  const droppedEnv: string[] = [];
  for (let i = 0; i < count; i++) {
    const name = readString(reader, `dropped[${i}]`);
    checkEnvName(name);
    droppedEnv.push(name);
  }
  checkEnvUnique(droppedEnv);
  if (version < 3) {
    reader.end('STARTED');
    return { type: 'started', programPid, mainPid, unit, droppedEnv };
  }
  const sessionId = readSessionId(reader);
  reader.end('STARTED');
  return { type: 'started', programPid, mainPid, unit, droppedEnv, sessionId };
}

/** Version 2's EXIT and STOPPED: the program's end, then the end record, then the result. */
function parseEnd(reader: BufferReader, what: string): { code: number; status: number; result: string; accounting: Accounting } {
  const code = reader.u8(`${what} code`);
  const status = reader.i32(`${what} status`);
  checkExit(code, status);
  const accounting = {} as Accounting;
  for (const field of ACCOUNTING_FIELDS) {
    const value = reader.u64(field);
    if (value === Limits.UNAVAILABLE) accounting[field] = null;
    else if (value > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new ProtocolError('BAD_VALUE', `${field} ${value} is beyond 2^53 and not the unavailable marker`);
    } else accounting[field] = Number(value);
  }
  const size = reader.u32('result length');
  if (size > Limits.MAX_RESULT) {
    throw new ProtocolError('OVERSIZE', `result of ${size} bytes exceeds ${Limits.MAX_RESULT}`);
  }
  const result = reader.latin1(size, 'result');
  checkToken('result', result, Limits.MAX_RESULT);
  reader.end(what);
  return { code, status, result, accounting };
}
