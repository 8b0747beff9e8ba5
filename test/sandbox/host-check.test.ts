// Unit tests of the host check's comparison.
import { tmpdir } from 'node:os';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, rmSync } from 'node:fs';
import { checkHost, compareSnapshots, placeCanary, snapshotHost, type HostSnapshot } from './host-check.ts';

const before: HostSnapshot = { tmp: ['a', 'b'], run: ['dbus', 'lock'], mounts: 30, hashes: { '/etc/passwd': '1', '/etc/shadow': '2' } };

test('identical snapshots differ in nothing', () => {
  assert.equal(compareSnapshots(before, structuredClone(before), true), { differences: [], warnings: [] });
});

test('lists every difference', () => {
  const after: HostSnapshot = { tmp: ['a', 'c'], run: ['dbus', 'lock', 'mount'], mounts: 31, hashes: { '/etc/passwd': '1', '/etc/shadow': '3' } };
  const { differences } = compareSnapshots(before, after, true);
  assert.equal(differences, [
    `${tmpdir()}: appeared: c`,
    `${tmpdir()}: disappeared: b`,
    '/run: appeared: mount',
    'host mount count changed: 30 → 31',
    '/etc/shadow changed (sha256 2 → 3)',
  ]);
});

test('outside strict mode a new temp name only warns, unless systemd would have made it', () => {
  const after: HostSnapshot = { ...before, tmp: ['a', 'b', 'w1.log', '.X11-unix', 'systemd-private-1-x'] };
  const { differences, warnings } = compareSnapshots(before, after, false);
  assert.equal(differences, [`${tmpdir()}: appeared: .X11-unix, systemd-private-1-x`]);
  assert.equal(warnings, [`${tmpdir()}: appeared (not from systemd; other work on this host?): w1.log`]);
});

test('a name that disappeared from the temp dir fails in strict mode and only warns outside it (ordinary churn)', () => {
  assert.equal(compareSnapshots(before, { ...before, tmp: ['a'] }, true).differences, [`${tmpdir()}: disappeared: b`]);
  assert.equal(compareSnapshots(before, { ...before, tmp: ['a'] }, false), { differences: [], warnings: [`${tmpdir()}: disappeared (deleted by their owners?): b`] });
});

test('a wiped temp dir fails through the canary, strict or not', () => {
  const canary = placeCanary();
  rmSync(canary);
  const traces = { canary };
  assert.throws(() => checkHost(snapshotHost(), traces, false), (error: Error) => error.message.includes(`the canary ${canary} placed before boot is gone`));
});

test('the canary is left out of the listings and removed by the check', () => {
  const snapshot = snapshotHost();
  const canary = placeCanary();
  assert.equal(snapshotHost().tmp, snapshot.tmp);
  checkHost(snapshot, { canary }, true);
  assert.not.ok(existsSync(canary));
});

test.run();
