// ProtocolError: a stable code, the wire code beside it, recognisable without string matching.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ErrorCode } from '../../src/protocol/constants.ts';
import { ProtocolError, isProtocolError } from '../../src/protocol/errors.ts';

test('carries code and wire code; PROTOCOL unless told otherwise', () => {
  const plain = new ProtocolError('OVERSIZE', 'too big');
  assert.is(plain.code, 'OVERSIZE');
  assert.is(plain.wireCode, ErrorCode.PROTOCOL);
  assert.is(plain.name, 'ProtocolError');
  assert.ok(plain instanceof Error);
  assert.is(new ProtocolError('TOO_MANY', 'argv', ErrorCode.BAD_START).wireCode, ErrorCode.BAD_START);
});

test('isProtocolError tells it from other errors', () => {
  assert.ok(isProtocolError(new ProtocolError('BAD_VALUE', 'x')));
  const lookalike = Object.assign(new Error('x'), { code: 'BAD_VALUE' });
  assert.not.ok(isProtocolError(lookalike));
  assert.not.ok(isProtocolError(undefined));
});

test.run();
