// Unit tests of telling a sandbox leftover from a sandbox about to boot: the owner a name records,
// and the verdict on a cgroup whose temp dir is not in our temp dir (another run's, or gone).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SANDBOX_DIR_PREFIX } from './host-check.ts';
import { isLeftoverCgroup, namePrefix, ownerInName, UNRECORDED_CGROUP_GRACE_MS } from './stale.ts';

test('a name records its owner; a name an older boot gave records none', () => {
  const owner = { pid: 4242, start: '151137' };
  assert.equal(ownerInName(`${namePrefix(owner)}Ab3xYz`), owner);
  assert.is(ownerInName(`${SANDBOX_DIR_PREFIX}EvYCAI`), undefined);
  assert.is(ownerInName(`${namePrefix(owner)}Ab3xYz-extra`), undefined, 'only the whole name as mkdtemp makes it');
});

test('an empty cgroup of a live owner is kept however old: it may be about to get its first process', () => {
  assert.not.ok(isLeftoverCgroup({ owner: 'alive', processes: 0, ageMs: 0 }));
  assert.not.ok(isLeftoverCgroup({ owner: 'alive', processes: 0, ageMs: 10 * UNRECORDED_CGROUP_GRACE_MS }));
});

test('an empty cgroup of a dead owner is a leftover at once', () => {
  assert.ok(isLeftoverCgroup({ owner: 'dead', processes: 0, ageMs: 0 }));
});

test('a cgroup with a process in it is never a leftover', () => {
  for (const owner of ['alive', 'dead', 'unrecorded'] as const) {
    assert.not.ok(isLeftoverCgroup({ owner, processes: 1, ageMs: 10 * UNRECORDED_CGROUP_GRACE_MS }), owner);
  }
});

test('an empty cgroup without an owner is a leftover only once older than any boot takes to fill it', () => {
  assert.not.ok(isLeftoverCgroup({ owner: 'unrecorded', processes: 0, ageMs: 1000 }));
  assert.not.ok(isLeftoverCgroup({ owner: 'unrecorded', processes: 0, ageMs: UNRECORDED_CGROUP_GRACE_MS }));
  assert.ok(isLeftoverCgroup({ owner: 'unrecorded', processes: 0, ageMs: UNRECORDED_CGROUP_GRACE_MS + 1 }));
});

test.run();
