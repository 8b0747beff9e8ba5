// A START drawn from a warm unit (warm-start.ts): LAUNCH with the START's directory and the client's
// connection on the warm helper's channel, then ENV and GO, and no unit asked for; a session that ended
// while its draw was under way sends nothing and stops the unit it drew.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync, fstatSync } from 'node:fs';
import { native } from '../../src/native/binding.ts';
import { ErrorCode, SessionError } from '../../src/protocol/index.ts';
import { HelperMessageType, WARM_HELLO } from '../../src/control/helper-channel.ts';
import type { WarmClaim } from '../../src/worker/warm-unit.ts';
import { deferred } from '../support/deferred.ts';
import { fakeUnits, identity, runSession } from './session-fixture.ts';

/** Resolves once `fd` is readable (data or EOF). */
function readable(fd: number): Promise<void> {
  return new Promise((resolve) => {
    const watcher = native().watch(fd, { readable: true }, () => {
      watcher.close();
      resolve();
    });
  });
}

const UNIT = 'opencode-pty-session-00112233445566778899aabbccddeeff.service';

function warmSession(options: { peerCgroup?: string } = {}) {
  const stopped: string[] = [];
  let asked = 0;
  const manager = {
    ...fakeUnits(() => {
      asked += 1;
      return new Promise(() => undefined);
    }),
    stopAndWait: async (name: string) => void stopped.push(name),
  };
  const draw = deferred<WarmClaim | undefined>();
  const [workerEnd, helperEnd] = native().socketpair();
  const drawn = deferred<boolean>();
  const run = runSession(manager, {
    ...options,
    drawWarm: (kept) => {
      drawn.resolve(kept);
      return draw.promise;
    },
  });
  return { ...run, draw, drawn: drawn.promise, claim: { name: UNIT, mainPid: process.pid, fd: workerEnd, hello: WARM_HELLO }, helperEnd, stopped, asked: () => asked };
}

test('a drawn warm unit gets LAUNCH with the directory and the client connection, then ENV and GO; no unit is asked for', async () => {
  const { draw, drawn, claim, helperEnd, asked, session, clientFd, ended, dirIdentity, serverIdentity, cleanUp } = warmSession();
  assert.is(await drawn, false, 'not a kept START');
  draw.resolve(claim);
  const buffer = Buffer.alloc(256 * 1024);
  await readable(helperEnd);
  const received = native().recvmsg(helperEnd, buffer, 0, buffer.length, 4);
  assert.ok(received, 'LAUNCH came');
  assert.is(buffer[0], HelperMessageType.LAUNCH);
  const length = buffer.readUInt32BE(1);
  const args = buffer.subarray(5, 5 + length).toString().split('\0');
  assert.equal(args.slice(-4), ['24', '80', '/bin/true', '']);
  assert.is(args[0], '--env-from-control');
  assert.is(received!.fds.length, 2, 'the directory, then the client connection');
  const [dir, client] = received!.fds as [number, number];
  const id = (fd: number) => {
    const stat = fstatSync(fd, { bigint: true });
    return `${stat.dev}:${stat.ino}`;
  };
  assert.is(id(dir), dirIdentity);
  assert.is(id(client), serverIdentity);
  // ENV and GO follow LAUNCH on the channel, as they precede a fresh helper's start.
  let rest = buffer.subarray(5 + length, received!.bytes);
  if (rest.length === 0) {
    const more = native().recvmsg(helperEnd, buffer, 0, buffer.length, 0);
    rest = buffer.subarray(0, more?.bytes ?? 0);
  }
  assert.is(rest[0], HelperMessageType.ENV);
  assert.is(rest[5 + rest.readUInt32BE(1)], HelperMessageType.GO);
  assert.is(asked(), 0, 'no unit asked for');
  assert.is(session.unit, UNIT);
  session.end('error', new SessionError(ErrorCode.INTERNAL, 'test over'));
  closeSync(dir);
  closeSync(client);
  closeSync(clientFd);
  closeSync(helperEnd);
  await ended;
  cleanUp();
});

test('a session that ends while its draw is under way sends nothing on the drawn channel, closes it and stops that unit', async () => {
  const { draw, drawn, claim, helperEnd, stopped, asked, session, clientFd, ended, cleanUp } = warmSession();
  await drawn;
  session.end('shutdown', new SessionError(ErrorCode.SHUTDOWN, 'supervisor is shutting down'));
  draw.resolve(claim);
  await ended;
  await readable(helperEnd);
  assert.equal(stopped, [UNIT], 'stopped as its channel closed');
  const buffer = Buffer.alloc(64);
  const received = native().recvmsg(helperEnd, buffer, 0, buffer.length, 4);
  assert.equal(received && [received.bytes, received.fds.length], [0, 0], 'EOF, nothing sent');
  assert.is(asked(), 0);
  closeSync(clientFd);
  closeSync(helperEnd);
  cleanUp();
});

test('a START refused after its draw (its peer left the client unit) closes the drawn channel and stops that unit', async () => {
  const { draw, drawn, claim, helperEnd, stopped, asked, clientFd, ended, cleanUp } = warmSession({ peerCgroup: '/system.slice/no-such-client.service' });
  await drawn;
  draw.resolve(claim);
  await ended;
  // Root's end of the warm helper's channel: one leaked descriptor per such START before.
  assert.is(identity(claim.fd), undefined, 'the worker closed its end of the drawn channel');
  await readable(helperEnd);
  const buffer = Buffer.alloc(64);
  const received = native().recvmsg(helperEnd, buffer, 0, buffer.length, 4);
  assert.equal(received && [received.bytes, received.fds.length], [0, 0], 'EOF, no LAUNCH');
  assert.equal(stopped, [UNIT]);
  assert.is(asked(), 0);
  closeSync(clientFd);
  closeSync(helperEnd);
  cleanUp();
});

test.run();
