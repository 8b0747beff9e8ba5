// A kept START whose start fails after its rendezvous was bound (session-start.ts rendezvous(), then the
// unit's start job fails before the helper named its program): nothing of the session may be left in
// root's directory of kept sessions. The broker removes files without a unit only at its own start, and it
// does not stop while any session runs, so each failed kept start would leave one socket file behind in
// /run for as long as the broker runs.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync, constants, fstatSync, mkdtempSync, openSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { native } from '../../src/native/binding.ts';
import { encodeFrame } from '../../src/protocol/index.ts';
import { SystemdError } from '../../src/systemd/errors.ts';
import { KeptStore } from '../../src/kept-store/store.ts';
import { Session } from '../../src/worker/session.ts';
import { RawClient } from '../support/frame-client.ts';
import { scriptedStart, sessionConfig } from './session-fixture.ts';

test('a kept start that fails after its rendezvous was bound leaves no socket behind', async () => {
  // Root's own directory: its check (KeptStore.ensure) needs uid 0, the supervisor's and the test runner's.
  if (process.getuid?.() !== 0) return;
  const base = mkdtempSync(join(tmpdir(), 'kept-leak-'));
  const store = new KeptStore(join(base, 'kept'));
  const { manager, job, asked } = scriptedStart();
  const [clientFd, server] = native().socketpair();
  const session = new Session(server, native().pidfdOpen(process.pid), { pid: process.pid, uid: process.getuid!(), gid: process.getgid!(), cgroup: null }, 5000, {
    manager,
    config: sessionConfig,
    helperPath: '/nonexistent/opencode-pty-session',
    keptStore: store,
    rendezvousCgroup: '/',
    version: 3,
    askKeep: async () => true,
    report: () => undefined,
    log: () => undefined,
  });
  const ended = session.run();
  const dirFd = openSync(base, constants.O_RDONLY | constants.O_DIRECTORY);
  const stat = fstatSync(dirFd, { bigint: true });
  const start = encodeFrame({ type: 'start', rows: 24, cols: 80, cwdDev: stat.dev, cwdIno: stat.ino, argv: ['/bin/true'], env: [], keepMs: 60_000, retainBytes: 0, label: 'x' }, 3);
  assert.is(native().sendmsg(clientFd, start, 0, start.length, [dirFd]), start.length);
  closeSync(dirFd);
  const client = new RawClient(clientFd, 3, { autoCredit: false });
  const { helperCopy, stdoutCopy, progress } = await asked.promise;
  assert.equal(readdirSync(store.dir).filter((name) => name.endsWith('.sock')).length, 1, 'the rendezvous is bound before the unit is asked for');
  progress.forked?.(process.pid);
  job.reject(new SystemdError('UNIT_START_FAILED', 'start job ended "failed"', { jobResult: 'failed' }));
  await client.frame('error');
  assert.is(await ended, 'error');
  try {
    assert.equal(readdirSync(store.dir), [], 'nothing of the failed start is left in the directory of kept sessions');
  } finally {
    client.close();
    closeSync(helperCopy);
    closeSync(stdoutCopy);
    rmSync(base, { recursive: true, force: true });
  }
});

test.run();
