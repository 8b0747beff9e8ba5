// Unit names: generation from random bytes, prefix and name validation, bus_label_escape paths.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  isSessionUnitName,
  sessionIdOf,
  unitNameFor,
  unitObjectPath,
  validatePrefix,
  validateUnitName,
} from '../../src/systemd/unit-names.ts';
import { throwsCode } from './helpers.ts';

const BYTES = Buffer.from('00112233445566778899aabbccddeeff', 'hex');

test('unitNameFor: prefix, "session-", the bytes in lower-case hex, ".service"', () => {
  assert.is(unitNameFor(BYTES), 'opencode-pty-session-00112233445566778899aabbccddeeff.service');
  assert.is(unitNameFor(BYTES.subarray(0, 8), 'ocp.test-'), 'ocp.test-session-0011223344556677.service');
});

test('unitNameFor refuses fewer than 8 random bytes and names past 255 characters', () => {
  throwsCode(() => unitNameFor(BYTES.subarray(0, 7)), 'INVALID_UNIT_NAME');
  throwsCode(() => unitNameFor(Buffer.alloc(120)), 'INVALID_UNIT_NAME');
});

test('prefixes: alphanumeric start, unit-name characters only, no glob, template or escape', () => {
  for (const prefix of ['opencode-pty-', 'a', 'x:y_z.w-']) assert.is(validatePrefix(prefix), prefix);
  for (const prefix of ['', '-x', 'a*', 'a?', 'a[b]', 'a@', 'a\\x2d', 'a b', 'a/b', 'ä', 'x'.repeat(65)]) {
    throwsCode(() => validatePrefix(prefix), 'INVALID_UNIT_NAME');
    throwsCode(() => unitNameFor(BYTES, prefix), 'INVALID_UNIT_NAME');
  }
});

test('isSessionUnitName recognises exactly what unitNameFor makes with that prefix', () => {
  const name = unitNameFor(BYTES);
  assert.ok(isSessionUnitName(name));
  assert.not.ok(isSessionUnitName(name, 'other-'));
  assert.not.ok(isSessionUnitName('opencode-pty-session-XYZ.service'));
  assert.not.ok(isSessionUnitName('opencode-pty-session-00.socket'));
  assert.not.ok(isSessionUnitName('opencode-pty-supervisor@broker.service'));
});

test('validateUnitName accepts plain and instance service names only', () => {
  for (const name of ['opencode.service', 'a@b.service', 'x\\x2dy.service']) assert.is(validateUnitName(name), name);
  for (const name of ['', 'opencode', 'a.socket', 'a b.service', 'a*.service', '../x.service', `${'x'.repeat(250)}.service`]) {
    throwsCode(() => validateUnitName(name), 'INVALID_UNIT_NAME');
  }
});

test('unitObjectPath escapes as bus_label_escape: letters kept, digits kept except first, others _xx', () => {
  assert.is(unitObjectPath('opencode-pty-session-00ff.service'), '/org/freedesktop/systemd1/unit/opencode_2dpty_2dsession_2d00ff_2eservice');
  assert.is(unitObjectPath('1a.service'), '/org/freedesktop/systemd1/unit/_31a_2eservice');
  assert.is(unitObjectPath('a@b\\x.service'), '/org/freedesktop/systemd1/unit/a_40b_5cx_2eservice');
  assert.is(unitObjectPath(''), '/org/freedesktop/systemd1/unit/_');
});

test('sessionIdOf: the first 13 hex digits of the random part, below 2^52, stable for a name', () => {
  const name = unitNameFor(Buffer.from('0123456789abcdeffedcba9876543210', 'hex'));
  assert.is(sessionIdOf(name), 0x0123456789abc);
  assert.is(sessionIdOf(name), sessionIdOf(`${name}`));
  const top = unitNameFor(Buffer.alloc(16, 0xff));
  assert.is(sessionIdOf(top), 2 ** 52 - 1);
  assert.ok(Number.isSafeInteger(sessionIdOf(top)));
  assert.is(sessionIdOf(unitNameFor(Buffer.alloc(16))), undefined, 'the id 0 is never valid');
  assert.is(sessionIdOf(unitNameFor(Buffer.alloc(16, 0xab), 'x-'), 'x-'), 0xababababababa);
  assert.is(sessionIdOf(unitNameFor(Buffer.alloc(16, 0xab), 'x-')), undefined, 'another prefix');
  for (const other of ['opencode-pty-session-0123.service', 'opencode-pty-supervisor@broker.service', 'opencode-pty-session-XYZXYZXYZXYZXYZX.service']) {
    assert.is(sessionIdOf(other), undefined, other);
  }
});

test.run();
