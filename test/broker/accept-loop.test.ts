// The accept loop over a real listening socket: it pauses, as for EMFILE, while too many closed
// connections wait for the close pool to take the descriptors they queued, and goes on after.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ACCEPT_BATCH, type AcceptHandler, AcceptLoop, CHECKS_PER_EVENT, closeBacklog, MAX_WAITING_CHECKS } from '../../src/broker/accept-loop.ts';
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

test('a queue of 200: refusals from what is known all taken in one event, at most 8 full checks an event, the rest in later turns, each connection handled once', async () => {
  // (Accepting pauses while 64 connections wait for their checks: a queue of mostly full checks is taken over several events.)
  const scratch = mkdtempSync(join(scratchRoot, 'accept-loop-'));
  const path = join(scratch, 's.sock');
  const listenFd = native().listenUnix(path, 256);
  const clients = Array.from({ length: 200 }, () => native().connectUnix(path));
  const seen: { fd: number; how: 'quick' | 'check'; event: number }[] = [];
  let event = 0;
  let done: () => void = () => undefined;
  const all = new Promise<void>((resolve) => (done = resolve));
  const note = (fd: number, how: 'quick' | 'check') => {
    seen.push({ fd, how, event });
    if (seen.length === clients.length) done();
  };
  // Nine in ten are refused from what is known; the rest need the full checks.
  let order = 0;
  const loop = new AcceptLoop(
    listenFd,
    {
      quick: (connection) => (order++ % 10 !== 0 ? (note(connection.fd, 'quick'), true) : false),
      check: (connection) => note(connection.fd, 'check'),
      drop: (connection) => closeSync(connection.fd),
      order: () => ({ mainPid: undefined, clientUid: process.getuid!() }),
      afterEvent: () => (event += 1),
    },
    () => undefined,
    () => undefined,
  );
  loop.start();
  try {
    await all;
    assert.is(new Set(seen.map((s) => s.fd)).size, 200, 'each connection once');
    assert.is(seen.filter((s) => s.how === 'quick').length, 180);
    const firstEvent = seen.filter((s) => s.event === 0);
    assert.is(firstEvent.filter((s) => s.how === 'quick').length, 180, 'the queue taken in one event');
    assert.is(firstEvent.filter((s) => s.how === 'check').length, 8, 'at most 8 full checks in it');
    assert.is(seen.filter((s) => s.how === 'check').length, 20, 'the 12 left waiting checked in later turns');
  } finally {
    loop.close();
    for (const fd of [...clients, listenFd, ...seen.map((s) => s.fd)]) closeSync(fd);
    rmSync(scratch, { recursive: true, force: true });
  }
});

test('connections waiting for their full checks are bounded: accepting pauses at 64 (one batch more at most) and the queue stays with the kernel meanwhile', async () => {
  const scratch = mkdtempSync(join(scratchRoot, 'accept-loop-'));
  const path = join(scratch, 's.sock');
  const listenFd = native().listenUnix(path, 256);
  const clients = Array.from({ length: 200 }, () => native().connectUnix(path));
  const checked: { fd: number; event: number }[] = [];
  let event = 0;
  let acceptedFirst = 0;
  let done: () => void = () => undefined;
  const all = new Promise<void>((resolve) => (done = resolve));
  const loop = new AcceptLoop(
    listenFd,
    {
      quick: () => (event === 0 && (acceptedFirst += 1), false),
      check: (connection) => (checked.push({ fd: connection.fd, event }), checked.length === clients.length && done()),
      drop: (connection) => closeSync(connection.fd),
      order: () => ({ mainPid: undefined, clientUid: process.getuid!() }),
      afterEvent: () => (event += 1),
    },
    () => undefined,
    () => undefined,
  );
  loop.start();
  try {
    await all;
    assert.ok(acceptedFirst >= 8 + MAX_WAITING_CHECKS && acceptedFirst <= 8 + MAX_WAITING_CHECKS + ACCEPT_BATCH, `accepted in the first event: ${acceptedFirst}`);
    assert.is(checked.filter((c) => c.event === 0).length, CHECKS_PER_EVENT);
    assert.is(new Set(checked.map((c) => c.fd)).size, 200);
  } finally {
    loop.close();
    for (const fd of [...clients, listenFd, ...checked.map((c) => c.fd)]) closeSync(fd);
    rmSync(scratch, { recursive: true, force: true });
  }
});

test("the MainPID's connection (by the hint) is checked at once, ahead of its batch, beyond the full checks' bound", async () => {
  const scratch = mkdtempSync(join(scratchRoot, 'accept-loop-'));
  const path = join(scratch, 's.sock');
  const listenFd = native().listenUnix(path, 64);
  const clients = Array.from({ length: 20 }, () => native().connectUnix(path));
  const checked: number[] = [];
  let done: () => void = () => undefined;
  const all = new Promise<void>((resolve) => (done = resolve));
  // Every connection here is this process: with the hint naming it, each is "the MainPID's".
  const loop = new AcceptLoop(
    listenFd,
    {
      quick: () => false,
      check: (connection) => (checked.push(connection.fd), checked.length === clients.length && done()),
      drop: (connection) => closeSync(connection.fd),
      order: () => ({ mainPid: process.pid, clientUid: process.getuid!() }),
    },
    () => undefined,
    () => undefined,
  );
  let synchronous = 0;
  loop.start();
  try {
    await new Promise<void>((resolve) => setImmediate(() => ((synchronous = checked.length), resolve())));
    await all;
    assert.is(synchronous, 20, 'all in the first event, none left waiting');
  } finally {
    loop.close();
    for (const fd of [...clients, listenFd, ...checked]) closeSync(fd);
    rmSync(scratch, { recursive: true, force: true });
  }
});

test('no backlog in an idle process', () => {
  assert.is(closeBacklog(), undefined);
});

test.run();
