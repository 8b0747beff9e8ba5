// The run's temp-dir check (test/run.mjs): which names it fails on, and which it leaves to other programs.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { fileURLToPath } from 'node:url';
import { otherRunners, ourPrefixes, tempLeftovers } from './temp-leftovers.mjs';

const root = fileURLToPath(new URL('../../', import.meta.url));
const prefixes = ['opencode-pty-', 'userfuse-', 'hangfs-'];
const quiet = { name: 'test/a.test.ts', pid: 100, before: ['tsx-0'], after: ['tsx-0'] };

test('a name of ours a suite made and left fails the run, named with that suite', () => {
  const leaky = { name: 'test/io/peer-close.test.ts', pid: 101, before: ['tsx-0'], after: ['tsx-0', 'userfuse-Ab3xYz'] };
  const found = tempLeftovers({ start: ['tsx-0'], end: ['tsx-0', 'userfuse-Ab3xYz'], suites: [quiet, leaky], prefixes });
  assert.equal(found.leftovers, [{ name: 'userfuse-Ab3xYz', suite: 'test/io/peer-close.test.ts' }]);
  assert.is(found.fail, true);
});

test('the same leftover while another run of this tree was under way: reported, not failed (its suites make the same names)', () => {
  const leaky = { name: 'test/io/peer-close.test.ts', pid: 101, before: [], after: ['userfuse-Ab3xYz'] };
  const found = tempLeftovers({ start: [], end: ['userfuse-Ab3xYz'], suites: [leaky], prefixes, concurrent: [4321] });
  assert.equal(found.leftovers, [{ name: 'userfuse-Ab3xYz', suite: 'test/io/peer-close.test.ts' }]);
  assert.is(found.fail, false);
  assert.match(found.notes.join('\n'), /runner PIDs 4321/);
});

test('a name that was there before the run, or that a suite made and removed, is no leftover', () => {
  const tidy = { name: 'test/b.test.ts', pid: 101, before: ['hangfs-old'], after: ['hangfs-old'] };
  const found = tempLeftovers({ start: ['hangfs-old'], end: ['hangfs-old'], suites: [tidy], prefixes });
  assert.equal(found, { leftovers: [], notes: [], fail: false });
});

test("another program's name that appeared during a suite is a note, not a failure", () => {
  const suite = { name: 'test/c.test.ts', pid: 101, before: [], after: ['bash_tool_1'] };
  const found = tempLeftovers({ start: [], end: ['bash_tool_1'], suites: [suite], prefixes });
  assert.equal(found.leftovers, []);
  assert.match(found.notes[0]!, /^bash_tool_1 \(appeared while test\/c\.test\.ts ran; not a name of ours/);
});

test("a sandbox dir owned by no suite of this run (another run's, booted meanwhile) is a note; one of ours fails", () => {
  const suite = { name: 'test/d.integration.ts', pid: 200, before: [], after: ['opencode-pty-sandbox-999-1-Ab3xYz', 'opencode-pty-sandbox-200-1-Cd4eFg'] };
  const found = tempLeftovers({ start: [], end: suite.after, suites: [suite], prefixes });
  assert.equal(found.leftovers, [{ name: 'opencode-pty-sandbox-200-1-Cd4eFg', suite: 'test/d.integration.ts' }]);
  assert.match(found.notes[0]!, /owned by process 999/);
});

test('a name of ours that appeared between suites (no suite ran) is not judged', () => {
  const found = tempLeftovers({ start: [], end: ['userfuse-x'], suites: [quiet], prefixes });
  assert.equal(found, { leftovers: [], notes: [], fail: false });
});

test("the prefixes are read from this tree's sources: the FUSE test's mountpoint prefix is among them", () => {
  const found = ourPrefixes(root);
  assert.ok(found.includes('userfuse-'), found.join(' '));
  assert.ok(found.includes('opencode-pty-'));
});

test('otherRunners never counts this process', () => {
  assert.not.ok(otherRunners(process.pid).includes(process.pid));
});

test.run();
