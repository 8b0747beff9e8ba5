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
