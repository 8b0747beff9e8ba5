// The program's pid as the session helper reports it: waited for, taken once, checked against the unit's cgroup.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ProgramPid, startedTemplate, programInUnit } from '../../src/worker/program-pid.ts';
import { SessionError } from '../../src/protocol/session-error.ts';
import { encodeFrame, parsePayload } from '../../src/protocol/index.ts';

const never = new Promise<void>(() => undefined);

test('resolves with the first pid reported, before or after the wait began', async () => {
  const early = new ProgramPid();
  early.reported(42);
  early.reported(43);
  assert.is(await early.wait(never, 10_000), 42);
  const late = new ProgramPid();
  const waiting = late.wait(never, 10_000);
  late.reported(7);
  late.failed('ignored once a pid came');
  assert.is(await waiting, 7);
});

test('the helper\'s end report first, or the unit\'s end first: START_FAILED; no word at all: INTERNAL', async () => {
  const failed = new ProgramPid();
  const waiting = failed.wait(never, 10_000);
  failed.failed('cannot enter the working directory');
  const error = await waiting.catch((e: SessionError) => e);
  assert.instance(error, SessionError);
  assert.is((error as SessionError).wireCode, 8);
  assert.match((error as SessionError).message, 'cannot enter the working directory');
  const gone = await new ProgramPid().wait(Promise.resolve(), 10_000).catch((e: SessionError) => e);
  assert.is((gone as SessionError).wireCode, 8);
  const silent = await new ProgramPid().wait(never, 5).catch((e: SessionError) => e);
  assert.is((silent as SessionError).wireCode, 10);
});

test('confirm: the pid in both versions; version 2 refuses the helper\'s own pid', async () => {
  const pid = new ProgramPid();
  assert.not.ok(pid.known);
  pid.reported(11);
  assert.ok(pid.known);
  assert.is(await pid.confirm(1, 10, 'u.service', { unitDone: never, timeoutMs: 10 }), 11);
  // This test process is not in u.service's cgroup, so the cgroup check cannot tell (undefined): taken.
  assert.is(await pid.confirm(2, 10, 'u.service', { unitDone: never, timeoutMs: 10 }), 11);
  const own = new ProgramPid();
  own.reported(10);
  assert.is(await own.confirm(1, 10, 'u.service', { unitDone: never, timeoutMs: 10 }), 10);
  const error = await own.confirm(2, 10, 'u.service', { unitDone: never, timeoutMs: 10 }).catch((e: SessionError) => e);
  assert.is((error as SessionError).wireCode, 10);
});

test('confirm in version 1 also waits for the fork: a helper that failed before it is START_FAILED', async () => {
  const pid = new ProgramPid();
  pid.failed('cannot enter the working directory');
  assert.not.ok(pid.known);
  const error = await pid.confirm(1, 10, 'u.service', { unitDone: never, timeoutMs: 10_000 }).catch((e: SessionError) => e);
  assert.instance(error, SessionError);
  assert.is((error as SessionError).wireCode, 8);
  const gone = await new ProgramPid().confirm(1, 10, 'u.service', { unitDone: Promise.resolve(), timeoutMs: 10_000 }).catch((e: SessionError) => e);
  assert.is((gone as SessionError).wireCode, 8);
});

test('startedTemplate: the frame the helper completes, pids as placeholders, dropped names in version 2 only', () => {
  assert.equal(startedTemplate(1, 'u.service', ['X']), { type: 'started', mainPid: 1, unit: 'u.service' });
  assert.equal(startedTemplate(2, 'u.service', ['X']), { type: 'started', mainPid: 1, unit: 'u.service', programPid: 1, droppedEnv: ['X'] });
});

test('the encoded template has its pids where the helper writes them (control.c take_started)', () => {
  for (const version of [1, 2]) {
    const frame = encodeFrame(startedTemplate(version, 'u.service', ['X']), version);
    if (version >= 2) {
      frame.writeUInt32BE(4243, 5); // programPid
      frame.writeUInt32BE(4242, 9); // mainPid
    } else frame.writeUInt32BE(4242, 5);
    const parsed = parsePayload(0x04, frame.subarray(5), version);
    assert.equal(parsed, version >= 2 ? { type: 'started', programPid: 4243, mainPid: 4242, unit: 'u.service', droppedEnv: ['X'] } : { type: 'started', mainPid: 4242, unit: 'u.service' });
  }
});

test('programInUnit: false only for a live process of another cgroup', () => {
  const cgroups: Record<string, string> = {
    '/proc/10/cgroup': '0::/system.slice/opencode-pty-session-a.service\n',
    '/proc/11/cgroup': '0::/system.slice/opencode-pty-session-a.service\n',
    '/proc/12/cgroup': '0::/user.slice/user-1000.slice/session-1.scope\n',
    // The client's user can name a cgroup of its delegated subtree as the unit: same last part, elsewhere.
    '/proc/13/cgroup': '0::/user.slice/user-1000.slice/user@1000.service/app.slice/opencode-pty-session-a.service\n',
  };
  const read = (path: string) => {
    const text = cgroups[path];
    if (text === undefined) throw Object.assign(new Error('ENOENT'), { code: 'ENOENT' });
    return text;
  };
  const unit = 'opencode-pty-session-a.service';
  assert.is(programInUnit(11, 10, unit, read), true);
  assert.is(programInUnit(12, 10, unit, read), false);
  assert.is(programInUnit(13, 10, unit, read), false, 'a cgroup of the same name elsewhere');
  assert.is(programInUnit(99, 10, unit, read), undefined, 'already ended');
  assert.is(programInUnit(11, 98, unit, read), undefined, 'the helper not seen in the unit: another pid namespace');
});

test.run();
