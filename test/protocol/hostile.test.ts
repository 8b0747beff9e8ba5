// The codec against the hostile data-phase table: each refused with the expected code and ERROR code.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { FrameDecoder } from '../../src/protocol/decode.ts';
import { ProtocolError } from '../../src/protocol/errors.ts';
import { bytes } from './fixtures.ts';
import { HOSTILE_DATA_PHASE } from './hostile-frames.ts';

for (const hostile of HOSTILE_DATA_PHASE) {
  test(`codec: ${hostile.name}`, () => {
    let caught: unknown;
    try {
      new FrameDecoder('to-server').push(bytes(hostile.hex));
    } catch (error) {
      caught = error;
    }
    if (hostile.codec === undefined) {
      assert.is(caught, undefined, 'a valid frame: only the session refuses it');
      return;
    }
    assert.ok(caught instanceof ProtocolError, String(caught));
    assert.is((caught as ProtocolError).code, hostile.codec);
    assert.is((caught as ProtocolError).wireCode, hostile.wire);
  });
}

test.run();
