// A start that waits for the bus (a reconnection under way) while the client goes away: the session
// ends at once, but StartTransientUnit is marshalled only when the bus is back, and the descriptors it
// carries must still be the session's then. Closed meanwhile, their numbers would name whatever was
// opened since (the reconnection's own socket, the next session's connection) and hand that to systemd.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync, openSync } from 'node:fs';
import { native } from '../../src/native/binding.ts';
import { SystemdError } from '../../src/systemd/errors.ts';
import type { SessionUnitSpec } from '../../src/systemd/unit-properties.ts';
import { fakeUnits, identity, runSession } from './session-fixture.ts';

/**
 * A session whose StartTransientUnit waits for the bus, as BusSession's does while the connection is
 * made again: `onStart` sees the spec when the call is made, `marshalled` when the bus is back (the
 * call then fails, ending the start). Sends START and resolves once the call waits.
 */
async function stalledStart(hooks: { onStart?: (spec: SessionUnitSpec) => void; marshalled?: (spec: SessionUnitSpec) => void }) {
  let asked!: () => void;
  const startAsked = new Promise<void>((resolve) => (asked = resolve));
  let busBack!: () => void;
  const reconnected = new Promise<void>((resolve) => (busBack = resolve));
  const manager = fakeUnits(async (_name: string, spec: SessionUnitSpec) => {
    hooks.onStart?.(spec);
    asked();
    await reconnected;
    hooks.marshalled?.(spec);
    throw new SystemdError('DBUS_CLOSED', 'the test ends the start here');
  });
  const { clientFd: client, ended, serverIdentity, dirIdentity, cleanUp } = runSession(manager);
  await startAsked;
  return { client, ended, busBack, serverIdentity, dirIdentity, cleanUp };
}

test('the client gone while the start waits for the bus: the start, once sent, still carries the directory and the connection', async () => {
  let carried: { cwd?: string; stdout?: string } | undefined;
  const { client, ended, busBack, serverIdentity, dirIdentity, cleanUp } = await stalledStart({
    marshalled: (spec) => (carried = { cwd: identity(spec.cwdFd), stdout: identity(spec.stdoutFd) }),
  });
  closeSync(client);
  assert.is(await ended, 'client-gone');
  // What a reconnection opens meanwhile takes the lowest free numbers: the session's, if it closed them.
  const opened = Array.from({ length: 16 }, () => openSync('/dev/null', 'r'));
  busBack();
  await new Promise((resolve) => setImmediate(resolve));
  for (const fd of opened) closeSync(fd);
  cleanUp();
  assert.ok(carried, 'the start was marshalled');
  assert.is(carried!.cwd, dirIdentity, 'StandardInputFileDescriptor is the START directory');
  assert.is(carried!.stdout, serverIdentity, 'StandardOutputFileDescriptor is the client connection');
});

test('the client gone while the start waits for the bus: a unit that still starts finds no environment, so its helper never runs the program', async () => {
  // PID 1's copy of the helper's end (its stderr), as the late-started helper would read it.
  let helperCopy = -1;
  const { client, ended, busBack, cleanUp } = await stalledStart({ onStart: (spec) => (helperCopy = native().dupCloexec(spec.stderrFd!)) });
  closeSync(client);
  assert.is(await ended, 'client-gone');
  busBack();
  await new Promise((resolve) => setImmediate(resolve));
  cleanUp();
  // The environment is what makes the helper fork the program: at EOF before it, the helper ends.
  const got = native().recvmsg(helperCopy, Buffer.alloc(64 * 1024), 0, 64 * 1024, 1);
  closeSync(helperCopy);
  assert.is(got?.bytes ?? 0, 0, 'the ENV message was still queued for a helper of a session already over');
});

test.run();
