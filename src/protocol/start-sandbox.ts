// Version 4's START fields (docs/protocol.md "Version 4"): the profile, the network mode and the budgets
// a client asks for, read and written with one set of rules. The server's policy (floor, ceilings) is
// not the codec's: it judges the request later (src/worker/sandbox-request.ts).
import { ErrorCode, Limits } from './constants.ts';
import { BUDGET_FIELDS, NETWORK_MODES, type Budgets, type FrameOf, type NetworkMode } from './frames.ts';
import type { BufferReader } from './buffer-reader.ts';
import { BufferWriter } from './buffer-writer.ts';
import { ProtocolError } from './errors.ts';
import { START_SANDBOX_SIZE } from './layout.ts';


/** The largest budget: JavaScript holds every integer up to it exactly (a u64 on the wire). */
export const MAX_BUDGET = Number.MAX_SAFE_INTEGER;

/** A profile name: lower-case letters, digits and dashes, starting with a letter (never unit-file text). */
const PROFILE_NAME = /^[a-z][a-z0-9-]*$/;

/** Throws PROFILE unless `name` is '' (none asked) or a well-formed profile name. */
export function checkProfileName(name: string): void {
  if (typeof name !== 'string') throw new ProtocolError('BAD_VALUE', 'profile is not a string', ErrorCode.PROFILE);
  if (name === '') return;
  if (name.length > Limits.MAX_PROFILE_NAME) {
    throw new ProtocolError('OVERSIZE', `profile name of ${name.length} bytes exceeds ${Limits.MAX_PROFILE_NAME}`, ErrorCode.PROFILE);
  }
  if (!PROFILE_NAME.test(name)) {
    throw new ProtocolError('BAD_VALUE', `profile name ${JSON.stringify(name)} is not lower-case letters, digits and dashes`, ErrorCode.PROFILE);
  }
}

/** Throws BUDGET unless `value` is an integer in 1..2^53-1: 0 is no budget, and neither is a negative or fractional one. */
export function checkBudget(field: string, value: unknown): void {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_BUDGET) {
    throw new ProtocolError('BAD_VALUE', `budget ${field} ${String(value)} is outside 1..2^53-1`, ErrorCode.BUDGET);
  }
}

/** The wire byte of a network mode: 0 none asked, then 1, 2, 3 in NETWORK_MODES' order. */
function networkByte(network: NetworkMode | undefined): number {
  if (network === undefined) return 0;
  const index = NETWORK_MODES.indexOf(network);
  if (index < 0) throw new ProtocolError('BAD_VALUE', `network mode ${JSON.stringify(network)} is not off, host-loopback or on`, ErrorCode.NETWORK);
  return index + 1;
}

/** START v4's fields after version 3's label. */
export function readStartSandbox(reader: BufferReader): { profile: string; network?: NetworkMode; budgets: Budgets } {
  const size = reader.u8('profile length');
  if (size > Limits.MAX_PROFILE_NAME) {
    throw new ProtocolError('OVERSIZE', `profile name of ${size} bytes exceeds ${Limits.MAX_PROFILE_NAME}`, ErrorCode.PROFILE);
  }
  const profile = reader.latin1(size, 'profile');
  checkProfileName(profile);
  const byte = reader.u8('network');
  if (byte > NETWORK_MODES.length) {
    throw new ProtocolError('BAD_VALUE', `network ${byte} is not 0 (the server's default), 1 off, 2 host-loopback or 3 on`, ErrorCode.NETWORK);
  }
  const flags = reader.u8('budget flags');
  if (flags >> BUDGET_FIELDS.length !== 0) {
    throw new ProtocolError('BAD_VALUE', `budget flags 0x${flags.toString(16)} name budgets that do not exist`, ErrorCode.BUDGET);
  }
  const budgets: Budgets = {};
  BUDGET_FIELDS.forEach((field, bit) => {
    const value = reader.u64(field);
    const asked = (flags & (1 << bit)) !== 0;
    if (!asked) {
      if (value !== 0n) throw new ProtocolError('BAD_VALUE', `budget ${field} is ${value} without its flag`, ErrorCode.BUDGET);
      return;
    }
    if (value > BigInt(MAX_BUDGET)) throw new ProtocolError('BAD_VALUE', `budget ${field} ${value} is beyond 2^53-1`, ErrorCode.BUDGET);
    checkBudget(field, Number(value));
    budgets[field] = Number(value);
  });
  return { profile, ...(byte === 0 ? {} : { network: NETWORK_MODES[byte - 1] }), budgets };
}

/** START v4: the version 3 body, then the profile, the network and the budgets. */
export function encodeStartSandbox(frame: FrameOf<'start'>, body: Buffer): Buffer {
  const profile = frame.profile ?? '';
  checkProfileName(profile);
  const network = networkByte(frame.network);
  let flags = 0;
  const values: bigint[] = [];
  BUDGET_FIELDS.forEach((field, bit) => {
    const value = frame.budgets?.[field];
    if (value === undefined) return void values.push(0n);
    checkBudget(field, value);
    flags |= 1 << bit;
    values.push(BigInt(value));
  });
  const size = body.length + START_SANDBOX_SIZE + profile.length;
  if (size > Limits.MAX_FRAME_PAYLOAD) {
    throw new ProtocolError('OVERSIZE', `START payload of ${size} bytes exceeds ${Limits.MAX_FRAME_PAYLOAD}`, ErrorCode.BAD_START);
  }
  const writer = new BufferWriter(size).bytes(body).u8(profile.length).bytes(Buffer.from(profile, 'latin1')).u8(network).u8(flags);
  for (const value of values) writer.u64(value);
  return writer.finish();
}
