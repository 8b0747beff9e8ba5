// A start that waits for the bus (a reconnection under way) while the client goes away: the session
// ends at once, but StartTransientUnit is marshalled only when the bus is back, and the descriptors it
// carries must still be the session's then. Closed meanwhile, their numbers would name whatever was
// opened since (the reconnection's own socket, the next session's connection) and hand that to systemd.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync, constants, fstatSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testConfig } from '../config-fixture.ts';
import { native } from '../../src/native/binding.ts';
import { encodeFrame } from '../../src/protocol/index.ts';
import type { Units } from '../../src/systemd/bus-session.ts';
import { SystemdError } from '../../src/systemd/errors.ts';
import type { SessionUnitSpec } from '../../src/systemd/unit-properties.ts';
import { Session } from '../../src/worker/session.ts';

const config = testConfig({ client: { user: 'agent', group: 'agent', uid: 1500, gid: 1500, service: null }, requireClientUnit: false });

/** Device and inode of an open descriptor, or undefined when the number is not open. */
function identity(fd: number): string | undefined {
  try {
    const stat = fstatSync(fd, { bigint: true });
    return `${stat.dev}:${stat.ino}`;
  } catch {
    return undefined;
  }
}

/**
 * A session whose StartTransientUnit waits for the bus, as BusSession's does while the connection is
 * made again: `onStart` sees the spec when the call is made, `marshalled` when the bus is back (the
 * call then fails, ending the start). Sends START for `dir` and resolves once the call waits.
 */
async function stalledStart(dir: string, hooks: { onStart?: (spec: SessionUnitSpec) => void; marshalled?: (spec: SessionUnitSpec) => void }) {
  const [client, server] = native().socketpair();
  const pidfd = native().pidfdOpen(process.pid);
  const serverIdentity = identity(server);
  let asked!: () => void;
  const startAsked = new Promise<void>((resolve) => (asked = resolve));
  let busBack!: () => void;
  const reconnected = new Promise<void>((resolve) => (busBack = resolve));
  const manager: Units = {
    async startSession(_name: string, spec: SessionUnitSpec) {
      hooks.onStart?.(spec);
      asked();
      await reconnected;
      hooks.marshalled?.(spec);
      throw new SystemdError('DBUS_CLOSED', 'the test ends the start here');
    },
    waitForExit: () => new Promise(() => undefined),
    kill: async () => undefined,
    stopAndWait: async () => undefined,
    listUnitsByPrefix: async () => [],
    serviceState: async () => {
      throw new Error('not used');
    },
    close: () => undefined,
  };
  const session = new Session(server, pidfd, { pid: process.pid, uid: process.getuid!(), gid: process.getgid!(), cgroup: null }, 5000, {
    manager,
    config,
    helperPath: '/nonexistent/opencode-pty-session',
    report: () => undefined,
    log: () => undefined,
  });
  const ended = session.run();
  const dirFd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  const stat = fstatSync(dirFd, { bigint: true });
  const start = encodeFrame({ type: 'start', rows: 24, cols: 80, cwdDev: stat.dev, cwdIno: stat.ino, argv: ['/bin/true'], env: [] });
  assert.is(native().sendmsg(client, start, 0, start.length, [dirFd]), start.length);
  const dirIdentity = identity(dirFd);
  closeSync(dirFd);
  await startAsked;
  return { client, ended, busBack, serverIdentity, dirIdentity };
}

test('the client gone while the start waits for the bus: the start, once sent, still carries the directory and the connection', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'start-descriptors-'));
  let carried: { cwd?: string; stdout?: string } | undefined;
  const { client, ended, busBack, serverIdentity, dirIdentity } = await stalledStart(dir, {
    marshalled: (spec) => (carried = { cwd: identity(spec.cwdFd), stdout: identity(spec.stdoutFd) }),
  });
  closeSync(client);
  assert.is(await ended, 'client-gone');
  // What a reconnection opens meanwhile takes the lowest free numbers: the session's, if it closed them.
  const opened = Array.from({ length: 16 }, () => openSync('/dev/null', 'r'));
  busBack();
  await new Promise((resolve) => setImmediate(resolve));
  for (const fd of opened) closeSync(fd);
  rmSync(dir, { recursive: true });
  assert.ok(carried, 'the start was marshalled');
  assert.is(carried!.cwd, dirIdentity, 'StandardInputFileDescriptor is the START directory');
  assert.is(carried!.stdout, serverIdentity, 'StandardOutputFileDescriptor is the client connection');
});

test('the client gone while the start waits for the bus: a unit that still starts finds no environment, so its helper never runs the program', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'start-descriptors-'));
  // PID 1's copy of the helper's end (its stderr), as the late-started helper would read it.
  let helperCopy = -1;
  const { client, ended, busBack } = await stalledStart(dir, { onStart: (spec) => (helperCopy = native().dupCloexec(spec.stderrFd!)) });
  closeSync(client);
  assert.is(await ended, 'client-gone');
  busBack();
  await new Promise((resolve) => setImmediate(resolve));
  rmSync(dir, { recursive: true });
  // The environment is what makes the helper fork the program: at EOF before it, the helper ends.
  const got = native().recvmsg(helperCopy, Buffer.alloc(64 * 1024), 0, 64 * 1024, 1);
  closeSync(helperCopy);
  assert.is(got?.bytes ?? 0, 0, 'the ENV message was still queued for a helper of a session already over');
});

test.run();
