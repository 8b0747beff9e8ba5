// The Node written into the broker's unit runs as root: every directory its path passes through,
// links followed, must be root's alone, or its owner could swap the program.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chownSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { nodeFacts, traversedDirs } from '../../src/operate/probe.ts';
import { nodeProblems } from '../../src/operate/requirements.ts';

const NOBODY = 65534;

test('a link in another account\'s directory to a root-owned Node: refused, the directory named', () => {
  const dir = mkdtempSync('/var/tmp/node-link-');
  try {
    chownSync(dir, NOBODY, NOBODY);
    const link = join(dir, 'node');
    symlinkSync(process.execPath, link);
    const problems = nodeProblems(nodeFacts(link), '>=20');
    assert.ok(problems.some((problem) => problem === `${dir} is owned by uid ${NOBODY}, not root`), problems.join('\n'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a root-owned Node by its real path: the chain is its own directories, every one root\'s', () => {
  const real = realpathSync(process.execPath);
  const facts = nodeFacts(real);
  assert.is(facts.chain[0]!.path, real);
  assert.ok(facts.chain.some((link) => link.path === dirname(real)));
  assert.ok(facts.chain.some((link) => link.path === '/'));
});

test('traversedDirs: relative links, "..", and a link inside a link are followed hop by hop', () => {
  const base = mkdtempSync('/var/tmp/node-walk-');
  try {
    mkdirSync(join(base, 'a/b'), { recursive: true });
    mkdirSync(join(base, 'c'));
    writeFileSync(join(base, 'c/x'), '');
    writeFileSync(join(base, 'a/b/x'), '');
    symlinkSync('../c', join(base, 'a/up')); // a/up -> base/c
    symlinkSync(join(base, 'a/up'), join(base, 'hop')); // hop -> a/up -> c
    const dirs = traversedDirs(join(base, 'hop/x'));
    for (const dir of [base, join(base, 'a'), join(base, 'c')]) assert.ok(dirs.includes(dir), `${dir} in ${dirs.join(' ')}`);
    assert.ok(traversedDirs(join(base, 'a/b/../b/x')).includes(join(base, 'a/b')));
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
});

test.run();
