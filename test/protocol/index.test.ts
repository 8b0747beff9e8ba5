// The public surface: what other modules import from the protocol index exists and works together.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as protocol from '../../src/protocol/index.ts';

test('exports the codec, its errors and the constants', () => {
  for (const name of ['FrameDecoder', 'parsePayload', 'parseHeader', 'encodeFrame', 'errorFrame', 'ProtocolError', 'isProtocolError', 'FrameType', 'ErrorCode', 'Limits', 'HEADER_SIZE', 'HELLO_MAGIC', 'PROTOCOL_VERSION', 'MAX_ERROR_TEXT']) {
    assert.ok(name in protocol, name);
  }
  const wire = protocol.encodeFrame(protocol.errorFrame(protocol.ErrorCode.SHUTDOWN, 'the supervisor is shutting down'));
  assert.equal(new protocol.FrameDecoder('to-client').push(wire), [
    { type: 'error', code: 11, message: 'the supervisor is shutting down' },
  ]);
});

test.run();
