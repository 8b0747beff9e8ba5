// The accept loop over a real listening socket: it pauses, as for EMFILE, while too many closed
// connections wait for the close pool to take the descriptors they queued, and goes on after.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type AcceptHandler, AcceptLoop, closeBacklog } from '../../src/broker/accept-loop.ts';
import { native } from '../../src/native/binding.ts';

/** A handler that checks every connection (none is refused quickly). */
function handler(check: (fd: number) => void): AcceptHandler {
  return { quick: () => false, check: (connection) => check(connection.fd), drop: (connection) => closeSync(connection.fd), order: () => ({ mainPid: undefined, clientUid: 1000 }) };
}

const scratchRoot = fileURLToPath(new URL('../../.sandbox/', import.meta.url));
mkdirSync(scratchRoot, { recursive: true });

test('while the close pool is backlogged nothing is accepted (logged once); after it the queued connection is taken', async () => {
  const scratch = mkdtempSync(join(scratchRoot, 'accept-loop-'));
  const listenFd = native().listenUnix(join(scratch, 's.sock'), 8);
  const logs: { level: string; message: string }[] = [];
  let backlog: string | undefined = 'every close thread held';
  let heard: (() => void) | undefined;
  const next = () => new Promise<void>((resolve) => (heard = resolve));
  const accepted: number[] = [];
  const loop = new AcceptLoop(
    listenFd,
    handler((fd) => (accepted.push(fd), heard?.())),
    (level, message) => (logs.push({ level, message }), heard?.()),
    () => backlog,
  );
  loop.start();
  const client = native().connectUnix(join(scratch, 's.sock'));
  try {
    await next();
    assert.equal(accepted, []);
    assert.is(logs.length, 1);
    assert.is(logs[0]!.level, 'warning');
    assert.match(logs[0]!.message, /every close thread held/);
    backlog = undefined;
    while (accepted.length === 0) await next();
    assert.is(accepted.length, 1);
    assert.ok(logs.some((entry) => entry.level === 'notice' && /accept works again/.test(entry.message)), JSON.stringify(logs));
  } finally {
    loop.close();
    for (const fd of [client, listenFd, ...accepted]) closeSync(fd);
    rmSync(scratch, { recursive: true, force: true });
  }
});

test('no backlog in an idle process', () => {
  assert.is(closeBacklog(), undefined);
});

test.run();
