// Shared assertions for the protocol suites: frames compared with their bytes as hex, errors by code.
import * as assert from 'uvu/assert';
import { ProtocolError, type ProtocolErrorCode } from '../../src/protocol/errors.ts';
import { FrameDecoder } from '../../src/protocol/decode.ts';
import type { Direction, Frame } from '../../src/protocol/frames.ts';
import { bytes } from './fixtures.ts';

/** Frames as plain objects, Buffers as hex, so deep equality means equal bytes and fields. */
export function plain(frames: Frame[]): unknown[] {
  return frames.map((frame) => {
    if ('data' in frame) return { ...frame, data: Buffer.from(frame.data).toString('hex') };
    if (frame.type === 'start') return { ...frame, env: frame.env.map(({ name, value }) => ({ name, value })) };
    return { ...frame };
  });
}

/** Runs `fn`, asserting it throws a ProtocolError with `code` (and `wireCode` when given). */
export function throwsCode(fn: () => unknown, code: ProtocolErrorCode, wireCode?: number): ProtocolError {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof ProtocolError, `expected ProtocolError ${code}, got ${String(caught)}`);
  const error = caught as ProtocolError;
  assert.is(error.code, code, error.message);
  if (wireCode !== undefined) assert.is(error.wireCode, wireCode, error.message);
  return error;
}

/** Feeds one hex frame to a fresh decoder and expects the error `code` from it. */
export function rejects(direction: Direction, hex: string, code: ProtocolErrorCode, wireCode?: number): ProtocolError {
  return throwsCode(() => new FrameDecoder(direction).push(bytes(hex)), code, wireCode);
}
