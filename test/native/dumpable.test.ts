// prctl(PR_SET_DUMPABLE, 0) through the addon (native/addon/dumpable.cc): the broker and its workers call it
// first thing, so that a uid-0 process without CAP_SYS_PTRACE cannot ptrace them.
import { spawnSync } from 'node:child_process';
import { test } from 'uvu';
import * as assert from 'uvu/assert';

test('setNonDumpable clears the flag, which /proc shows: the process is then root-owned to everyone', () => {
  const script = `import('${new URL('../../src/native/binding.ts', import.meta.url).href}').then(({ native }) => {
    const before = native().isDumpable();
    native().setNonDumpable();
    process.stdout.write(JSON.stringify({ before, after: native().isDumpable() }));
  });`;
  const run = spawnSync(process.execPath, ['--import', 'tsx', '-e', script], { encoding: 'utf8' });
  assert.is(run.status, 0, run.stderr);
  assert.equal(JSON.parse(run.stdout), { before: true, after: false });
});

test.run();
