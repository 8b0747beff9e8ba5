// Value rules shared by decoder and encoder, so the encoder never produces what a decoder refuses.
import { ErrorCode, Limits } from './constants.ts';
import { ProtocolError } from './errors.ts';

/** systemd's ExecMainCode: 0 when no main process exit was recorded, else CLD_EXITED, CLD_KILLED, CLD_DUMPED (waitid(2)). */
export const EXIT_CODES = [0, 1, 2, 3] as const;

/** Throws BAD_VALUE unless `value` is an integer in min..max. */
export function checkInteger(field: string, value: number, min: number, max: number, wireCode?: number): void {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ProtocolError('BAD_VALUE', `${field} ${String(value)} is outside ${min}..${max}`, wireCode);
  }
}

export function checkTerminalSize(rows: number, cols: number, wireCode?: number): void {
  checkInteger('rows', rows, 1, 0xffff, wireCode);
  checkInteger('cols', cols, 1, 0xffff, wireCode);
}

export function checkVersionRange(minVersion: number, maxVersion: number): void {
  checkInteger('minVersion', minVersion, 1, 0xffff);
  checkInteger('maxVersion', maxVersion, minVersion, 0xffff);
}

export function checkU64(field: string, value: bigint, wireCode?: number): void {
  if (typeof value !== 'bigint' || value < 0n || value > 0xffff_ffff_ffff_ffffn) {
    throw new ProtocolError('BAD_VALUE', `${field} is not an unsigned 64-bit integer`, wireCode);
  }
}

/** Throws unless `count` entries fit the limit (TOO_MANY) and, for argv, there is one at least. */
export function checkCount(field: string, count: number, min: number, max: number): void {
  if (count > max) {
    throw new ProtocolError('TOO_MANY', `${count} ${field} entries exceed ${max}`, ErrorCode.BAD_START);
  }
  checkInteger(`${field} count`, count, min, max, ErrorCode.BAD_START);
}

/** A length in bytes of one argv element, env name or env value: at most MAX_STRING. */
export function checkStringSize(field: string, bytes: number): void {
  if (bytes > Limits.MAX_STRING) {
    throw new ProtocolError('OVERSIZE', `${field} of ${bytes} bytes exceeds ${Limits.MAX_STRING}`, ErrorCode.BAD_START);
  }
}

/** A C string for execve(2) and systemd cannot hold NUL: it would silently cut the value. */
export function checkNoNul(field: string, value: string, wireCode?: number): void {
  if (value.includes('\0')) throw new ProtocolError('BAD_VALUE', `${field} contains a NUL byte`, wireCode);
}

export function checkArgument(index: number, value: string): void {
  checkNoNul(`argv[${index}]`, value, ErrorCode.BAD_START);
  // An empty program name cannot be executed; later arguments may be empty.
  if (index === 0 && value.length === 0) {
    throw new ProtocolError('BAD_VALUE', 'argv[0] is empty', ErrorCode.BAD_START);
  }
}

/** An environment name per environ(7): non-empty and without '=', or the entry would be split elsewhere. */
export function checkEnvName(name: string): void {
  checkNoNul('environment name', name, ErrorCode.BAD_START);
  if (name.length === 0 || name.includes('=')) {
    throw new ProtocolError('BAD_VALUE', `environment name ${JSON.stringify(name)} is empty or holds '='`, ErrorCode.BAD_START);
  }
}

/** Duplicate names would leave which value wins to the implementation: refused. */
export function checkEnvUnique(names: Iterable<string>): void {
  const seen = new Set<string>();
  for (const name of names) {
    if (seen.has(name)) {
      throw new ProtocolError('BAD_VALUE', `environment name ${JSON.stringify(name)} appears twice`, ErrorCode.BAD_START);
    }
    seen.add(name);
  }
}

/**
 * Unit names and systemd Result strings: printable ASCII without space (0x21..0x7e), 1..max bytes.
 * Takes the raw bytes' values as a string of the same length (latin1) so both sides share it.
 */
export function checkToken(field: string, value: string, max: number): void {
  if (value.length > max) {
    throw new ProtocolError('OVERSIZE', `${field} of ${value.length} bytes exceeds ${max}`);
  }
  if (!/^[\x21-\x7e]+$/.test(value)) {
    throw new ProtocolError('BAD_VALUE', `${field} must be 1..${max} printable ASCII characters`);
  }
}

export function checkExit(code: number, status: number): void {
  if (!(EXIT_CODES as readonly number[]).includes(code)) {
    throw new ProtocolError('BAD_VALUE', `EXIT code ${String(code)} is not 1 (exited), 2 (killed) or 3 (dumped)`);
  }
  checkInteger('EXIT status', status, -0x8000_0000, 0x7fff_ffff);
}

/** Version 3: session ids are 1..2^53-1, so JavaScript holds them exactly as numbers. */
export function checkSessionId(field: string, value: number, wireCode?: number): void {
  checkInteger(field, value, 1, Number.MAX_SAFE_INTEGER, wireCode);
}

/** A u64 read from the wire that must fit a JavaScript number (ids, Unix times): BAD_VALUE beyond 2^53-1. */
export function safeNumber(field: string, value: bigint, wireCode?: number): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new ProtocolError('BAD_VALUE', `${field} ${value} is beyond 2^53-1`, wireCode);
  }
  return Number(value);
}

/** Version 3: ATTACH's fromOffset is an offset below 2^63, or FROM_NOW (2^64-1); else BAD_OFFSET. */
export function checkFromOffset(value: bigint): void {
  checkU64('fromOffset', value, ErrorCode.BAD_OFFSET);
  if (value >= 1n << 63n && value !== Limits.FROM_NOW) {
    throw new ProtocolError('BAD_VALUE', `fromOffset ${value} is at or above 2^63 and not FROM_NOW`, ErrorCode.BAD_OFFSET);
  }
}

/** Version 3: START's keep fields (docs/protocol.md "START, version 3"); every violation is BAD_START. */
export function checkKeep(keepMs: number, retainBytes: number): void {
  const wire = ErrorCode.BAD_START;
  checkInteger('keepMs', keepMs, 0, 0xffff_ffff, wire);
  if (retainBytes !== 0) checkInteger('retainBytes', retainBytes, 4096, Limits.MAX_RETAINED_BYTES, wire);
  if (keepMs === 0 && retainBytes !== 0) {
    throw new ProtocolError('BAD_VALUE', 'retainBytes must be 0 when keepMs is 0 (the session is not kept)', wire);
  }
}

/** C0 controls, DEL and C1 controls: a label is shown in tables and journals, where they could forge lines. */
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/u;

/** Version 3: a label's UTF-8 bytes are at most MAX_LABEL, without control characters. */
export function checkLabel(label: string, bytes: number, wireCode?: number): void {
  if (bytes > Limits.MAX_LABEL) {
    throw new ProtocolError('OVERSIZE', `label of ${bytes} bytes exceeds ${Limits.MAX_LABEL}`, wireCode);
  }
  if (CONTROL_CHARACTER.test(label)) throw new ProtocolError('BAD_VALUE', 'label holds a control character', wireCode);
}

export function checkRole(role: number): void {
  if (role !== 1 && role !== 2) throw new ProtocolError('BAD_VALUE', `role ${String(role)} is not 1 (control) or 2 (observe)`);
}

/** UTF-8 bytes of a string; a lone surrogate has no UTF-8 form and would arrive altered, so it is refused. */
export function utf8(what: string, value: string, wireCode?: number): Buffer {
  if (typeof value !== 'string') throw new ProtocolError('BAD_VALUE', `${what} is not a string`, wireCode);
  if (/\p{Cs}/u.test(value)) throw new ProtocolError('BAD_UTF8', `${what} holds a lone surrogate`, wireCode);
  return Buffer.from(value, 'utf8');
}

/** Offsets are below 2^63 (ATTACH refuses any above) and oldest never passes next. */
export function checkOffsets(oldest: bigint, next: bigint, what: string): void {
  checkU64('oldest', oldest);
  checkU64('next', next);
  if (next >= 1n << 63n) throw new ProtocolError('BAD_VALUE', `${what}: offset ${next} is at or above 2^63`);
  if (oldest > next) throw new ProtocolError('BAD_VALUE', `${what}: oldest ${oldest} is past next ${next}`);
}

/** TRUNCATED's `dropped` bytes were asked for (fromOffset = oldest - dropped), so 1 ≤ dropped ≤ oldest. */
export function checkTruncated(oldest: bigint, dropped: bigint): void {
  checkOffsets(oldest, oldest, 'TRUNCATED');
  checkU64('dropped', dropped);
  if (dropped < 1n || dropped > oldest) throw new ProtocolError('BAD_VALUE', `TRUNCATED: dropped ${dropped} is outside 1..oldest (${oldest})`);
}
