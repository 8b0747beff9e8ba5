// A session's kept part (session-keep.ts): the START's connection counted attached before it is
// watched, so one gone before the start was seen through is a detach after that attach (root's keep
// deadline arms), and a DETACHED that came before then is held, not dropped.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { FdSocket } from '../../src/io/fd-socket.ts';
import { closeQuietly } from '../../src/io/fds.ts';
import { native } from '../../src/native/binding.ts';
import { SessionKeep } from '../../src/worker/session-keep.ts';
import type { Started } from '../../src/worker/session-start.ts';

const started: Started = {
  mainPid: 3,
  unit: 'opencode-pty-session-0000000000001234aaaa.service',
  frame: { type: 'start', rows: 24, cols: 80, cwdDev: 1n, cwdIno: 2n, argv: ['sh'], env: [], keepMs: 500, retainBytes: 0, label: 'x' },
  sessionId: 0x1234,
  cwd: '/',
  programPid: 4,
};

function keep(events: string[]): SessionKeep {
  const part = new SessionKeep({
    writeTimeoutMs: 1000,
    attached: () => void events.push('attach'),
    detached: () => void events.push('detach'),
    kept: () => void events.push('kept'),
    log: () => undefined,
  });
  part.planned({ keepMs: 500, retainBytes: 4096, label: 'x' });
  return part;
}

/** A START connection whose client has hung up already, as the worker sees it. */
async function hungUp(): Promise<FdSocket> {
  const [ours, theirs] = native().socketpair();
  const socket = new FdSocket(ours);
  socket.on('error', () => undefined);
  const seen = new Promise<void>((resolve) => socket.once('hangup', () => resolve()));
  socket.watchHangup();
  closeQuietly(theirs);
  await seen;
  return socket;
}

test('a START connection gone before the start was seen through: counted attached, then detached (the deadline arms), never left attached', async () => {
  const events: string[] = [];
  const part = keep(events);
  const client = await hungUp();
  part.started(started, client, undefined, 1);
  assert.equal(events, ['attach', 'kept', 'detach']);
  assert.is(part.side!.connections.attached, 0);
  part.closeAll();
});

test('a DETACHED of conn 0 before the start was seen through is held, then counts as that connection\'s detach', () => {
  const events: string[] = [];
  const part = keep(events);
  const [ours, theirs] = native().socketpair();
  const client = new FdSocket(ours);
  client.on('error', () => undefined);
  part.helperDetached({ conn: 0, reason: 'client-gone', code: 0, remainder: Buffer.alloc(0), text: '' });
  assert.equal(events, []);
  part.started(started, client, undefined, 1);
  assert.equal(events, ['attach', 'kept', 'detach']);
  assert.is(part.side!.connections.attached, 0);
  part.closeAll();
  closeQuietly(theirs);
});

test.run();
