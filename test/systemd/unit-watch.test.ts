// unitPhase (the one "done" decision), concernsUnit, and the watch driver against a fake signal source.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { SystemdSignal } from '../../src/systemd/dbus-connection.ts';
import { SystemdError } from '../../src/systemd/errors.ts';
import { unitObjectPath } from '../../src/systemd/unit-names.ts';
import { concernsUnit, unitPhase, watchUnit, type SignalSource } from '../../src/systemd/unit-watch.ts';
import { rejectsCode } from './helpers.ts';
import { deferred } from '../support/deferred.ts';

const NAME = 'opencode-pty-session-0011223344556677.service';
const PATH = unitObjectPath(NAME);

class FakeSource implements SignalSource {
  listeners = new Set<(signal: SystemdSignal) => void>();
  closeListeners = new Set<(error: SystemdError) => void>();
  onSignal(listener: (signal: SystemdSignal) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  onClose(listener: (error: SystemdError) => void): () => void {
    this.closeListeners.add(listener);
    return () => this.closeListeners.delete(listener);
  }
  emit(signal: SystemdSignal): void {
    for (const listener of [...this.listeners]) listener(signal);
  }
  close(): void {
    for (const listener of [...this.closeListeners]) listener(new SystemdError('DBUS_CLOSED', 'closed'));
  }
}

const changed = (path = PATH): SystemdSignal => ({ kind: 'properties-changed', path, interface: 'org.freedesktop.systemd1.Unit', changed: {}, invalidated: [] });

test('unitPhase: finished only when inactive or failed with no job pending', () => {
  assert.is(unitPhase({ loadState: 'loaded', activeState: 'inactive', jobId: 0 }), 'finished');
  assert.is(unitPhase({ loadState: 'loaded', activeState: 'failed', jobId: 0 }), 'finished');
  assert.is(unitPhase({ loadState: 'loaded', activeState: 'inactive', jobId: 12 }), 'running');
  assert.is(unitPhase({ loadState: 'loaded', activeState: 'failed', jobId: 3 }), 'running');
  for (const activeState of ['active', 'activating', 'deactivating', 'reloading']) {
    assert.is(unitPhase({ loadState: 'loaded', activeState, jobId: 0 }), 'running', activeState);
  }
});

test('unitPhase: gone when not loaded or only a not-found stub', () => {
  assert.is(unitPhase(undefined), 'gone');
  assert.is(unitPhase({ loadState: 'not-found', activeState: 'inactive', jobId: 0 }), 'gone');
});

test('concernsUnit: properties of its path, jobs and removal of its name, nothing else', () => {
  assert.ok(concernsUnit(changed(), NAME));
  assert.not.ok(concernsUnit(changed(unitObjectPath('other.service')), NAME));
  assert.ok(concernsUnit({ kind: 'job-removed', id: 1, job: '/org/freedesktop/systemd1/job/1', unit: NAME, result: 'done' }, NAME));
  assert.not.ok(concernsUnit({ kind: 'job-removed', id: 1, job: '/j', unit: 'other.service', result: 'done' }, NAME));
  assert.ok(concernsUnit({ kind: 'unit-removed', unit: NAME, path: PATH }, NAME));
  assert.not.ok(concernsUnit({ kind: 'unit-removed', unit: 'other.service', path: PATH }, NAME));
});

test('watchUnit resolves with the first defined evaluation and then stops listening', async () => {
  const source = new FakeSource();
  const answers = [undefined, undefined, 'done'];
  let calls = 0;
  const result = watchUnit(source, NAME, async () => answers[calls++]);
  await Promise.resolve();
  assert.is(calls, 1, 'evaluated at once');
  source.emit(changed(unitObjectPath('other.service')));
  await Promise.resolve();
  assert.is(calls, 1, 'another unit does not wake it');
  source.emit(changed());
  await new Promise(setImmediate);
  source.emit({ kind: 'unit-removed', unit: NAME, path: PATH });
  assert.is(await result, 'done');
  assert.is(calls, 3);
  assert.is(source.listeners.size, 0);
  assert.is(source.closeListeners.size, 0);
});

test('watchUnit: signals during an evaluation coalesce into exactly one more evaluation', async () => {
  const source = new FakeSource();
  const first = deferred<string | undefined>();
  let calls = 0;
  const result = watchUnit(source, NAME, () => (++calls === 1 ? first.promise : Promise.resolve('second')));
  source.emit(changed());
  source.emit(changed());
  source.emit(changed());
  assert.is(calls, 1, 'no evaluation overlaps another');
  first.resolve(undefined);
  assert.is(await result, 'second');
  assert.is(calls, 2);
});

test('watchUnit rejects with the evaluation error, or when the connection closes', async () => {
  const failing = new FakeSource();
  await rejectsCode(
    watchUnit(failing, NAME, async () => {
      throw new SystemdError('NO_SUCH_UNIT', 'gone');
    }),
    'NO_SUCH_UNIT',
  );
  assert.is(failing.listeners.size, 0);
  const closing = new FakeSource();
  const waiting = watchUnit(closing, NAME, async () => undefined);
  await Promise.resolve();
  closing.close();
  await rejectsCode(waiting, 'DBUS_CLOSED');
});

test('watchUnit with a deadline rejects with UNIT_WAIT_TIMEOUT when nothing changes', async () => {
  const source = new FakeSource();
  const error = await rejectsCode(watchUnit(source, NAME, async () => undefined, { timeoutMs: 1 }), 'UNIT_WAIT_TIMEOUT');
  assert.is(error.unit, NAME);
  assert.is(source.listeners.size, 0);
});

test('watchUnit: a value from decide ends the watch at once, though an evaluation still waits', async () => {
  const source = new FakeSource();
  const pending = deferred<string | undefined>();
  let calls = 0;
  const result = watchUnit(source, NAME, () => (calls++, pending.promise), { decide: (signal) => (signal.kind === 'unit-removed' ? 'decided' : undefined) });
  source.emit(changed());
  assert.is(await Promise.race([result, Promise.resolve('open')]), 'open', 'a signal decide gives nothing for only schedules a read');
  source.emit({ kind: 'unit-removed', unit: NAME, path: PATH });
  assert.is(await result, 'decided');
  assert.is(source.listeners.size, 0);
  pending.resolve('late');
  await new Promise(setImmediate);
  assert.is(calls, 1, 'the late evaluation is not followed by another');
});

test('watchUnit: a signal ignore names wakes no evaluation', async () => {
  const source = new FakeSource();
  let calls = 0;
  const result = watchUnit(source, NAME, async () => (calls++ === 0 ? undefined : 'done'), { ignore: (signal) => signal.kind === 'properties-changed' });
  await new Promise(setImmediate);
  source.emit(changed());
  await new Promise(setImmediate);
  assert.is(calls, 1, 'only the first look');
  source.emit({ kind: 'unit-removed', unit: NAME, path: PATH });
  assert.is(await result, 'done');
});

test('watchUnit: systemd reconnected under a new name (a re-exec) wakes a read of every watch, also one that knew its unit runs', async () => {
  const source = new FakeSource();
  let calls = 0;
  const result = watchUnit(source, NAME, async () => (calls++, 'done'), { known: true, ignore: () => false });
  await new Promise(setImmediate);
  assert.is(calls, 0, 'known to run: no first look');
  source.emit({ kind: 'systemd-reconnected', owner: ':1.9' });
  assert.is(await result, 'done');
  assert.ok(concernsUnit({ kind: 'systemd-reconnected', owner: ':1.9' }, NAME));
});

test.run();
