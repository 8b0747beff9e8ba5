// UnitManager against a real systemd in the test sandbox: exits as systemd reports them, start
// failures, stop and collection, listing by prefix, literal argv, and the unit's sandboxing.
import { randomBytes } from 'node:crypto';
import { closeSync, constants, openSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { native } from '../../src/native/binding.ts';
import { DbusConnection, MANAGER_INTERFACE, MANAGER_PATH } from '../../src/systemd/dbus-connection.ts';
import { UnitManager } from '../../src/systemd/unit-manager.ts';
import { unitNameFor, unitObjectPath } from '../../src/systemd/unit-names.ts';
import type { SessionUnitSpec } from '../../src/systemd/unit-properties.ts';
import { programLabel } from '../../src/systemd/unit-text.ts';
import { bootSandbox, sandboxUnavailable, type Sandbox } from '../sandbox/index.ts';
import { rejectsCode } from './helpers.ts';

const PREFIX = 'ocp-itest-';
const STOP_MS = 10_000;
/** A deadline so a bug fails the test instead of hanging the run. */
const WAIT = { timeoutMs: 10_000 };

let sandbox: Sandbox;
let manager: UnitManager;
/** Units started by the current test, stopped after it even when an assertion failed midway. */
const live = new Set<string>();

interface Session {
  name: string;
  /** Our end of the socketpair that is the unit's stdout. */
  output: number;
}

/** Starts argv as the client account, stdin a directory fd of its home, stdout a socketpair end. */
async function start(argv: string[], overrides: Partial<SessionUnitSpec> = {}, prefix = PREFIX): Promise<Session & { mainPid: number }> {
  const name = unitNameFor(randomBytes(8), prefix);
  const cwdFd = openSync(`${sandbox.root}${sandbox.client.home}`, constants.O_RDONLY | constants.O_DIRECTORY);
  const [output, unitEnd] = native().socketpair();
  try {
    const started = await manager.startSession(name, {
      description: `test ${programLabel(argv[0]!)}`,
      helperPath: argv[0]!,
      helperArgs: argv.slice(1),
      user: sandbox.client.user,
      group: sandbox.client.group,
      cwdFd,
      stdoutFd: unitEnd,
      environment: { TERM: 'dumb' },
      stopTimeoutSec: 5,
      ...overrides,
    });
    live.add(name);
    return { name, output, ...started };
  } catch (error) {
    closeSync(output);
    throw error;
  } finally {
    // systemd holds its own copies now; ours would keep the socket open past the unit's end.
    closeSync(cwdFd);
    closeSync(unitEnd);
  }
}

/** Everything the unit wrote, once it has exited (all its copies of the socket are closed). */
function drain(fd: number): string {
  const chunks: Buffer[] = [];
  const buffer = Buffer.alloc(64 * 1024);
  for (;;) {
    const received = native().recvmsg(fd, buffer, 0, buffer.length, 0);
    assert.ok(received, 'the unit has exited, so the socket is readable: data or EOF');
    if (received.bytes === 0) break;
    chunks.push(Buffer.from(buffer.subarray(0, received.bytes)));
  }
  closeSync(fd);
  return Buffer.concat(chunks).toString();
}

async function assertGone(name: string): Promise<void> {
  await rejectsCode(manager.serviceState(name), 'NO_SUCH_UNIT');
}

const unavailable = sandboxUnavailable();
if (unavailable) {
  console.log(`# skipped: ${unavailable}`);
  test.skip('real systemd suites need the sandbox', () => undefined);
} else {
  test.before(async () => {
    sandbox = await bootSandbox({ name: 'ocp-systemd-units' });
    manager = await UnitManager.connect(sandbox.busAddress);
  });

  test.after.each(async () => {
    for (const name of live) await manager.stopAndWait(name, STOP_MS);
    live.clear();
  });

  test.after(async () => {
    manager?.close();
    await sandbox?.stop();
  });

  test('exit 7: code 1, status 7, result exit-code; then stopped and collected', async () => {
    const session = await start(['/bin/sh', '-c', 'exit 7']);
    assert.ok(session.mainPid > 0, 'ExecMainPID is known even when the program already ended');
    assert.equal(await manager.waitForExit(session.name, WAIT), { code: 1, status: 7, result: 'exit-code' });
    assert.is(drain(session.output), '');
    await manager.stopAndWait(session.name, STOP_MS);
    await assertGone(session.name);
  });

  test('programs that exit at once, many at a time: each started, each with its exit (never a failed start)', async () => {
    // With Type=exec, a program that exits before PID 1 has seen its exec ends the start job
    // "failed"; many starts at once keep PID 1 busy enough for that to happen to some of them.
    const sessions = await Promise.all(Array.from({ length: 24 }, () => start(['/bin/sh', '-c', 'exit 7'])));
    for (const session of sessions) {
      assert.equal(await manager.waitForExit(session.name, WAIT), { code: 1, status: 7, result: 'exit-code' });
      assert.is(drain(session.output), '');
    }
  });

  test('killed by its own SIGINT: code 2 (killed), status 2, result success', async () => {
    const session = await start(['/bin/sh', '-c', 'kill -INT $$']);
    assert.equal(await manager.waitForExit(session.name, WAIT), { code: 2, status: 2, result: 'success' });
    drain(session.output);
    await manager.stopAndWait(session.name, STOP_MS);
    await assertGone(session.name);
  });

  test('missing binary: UNIT_START_FAILED with exit status 203, nothing left behind', async () => {
    const error = await rejectsCode(start(['/nonexistent/program']), 'UNIT_START_FAILED');
    assert.is(error.jobResult, 'failed');
    assert.is(error.exit?.status, 203);
    assert.ok(error.unit);
    await assertGone(error.unit!);
  });

  test('unknown user: UNIT_START_FAILED with exit status 217, nothing left behind', async () => {
    const error = await rejectsCode(start(['/bin/true'], { user: 'ocpty-nobody-here', group: 'ocpty-nobody-here' }), 'UNIT_START_FAILED');
    assert.is(error.exit?.status, 217);
    await assertGone(error.unit!);
  });

  test('a refused property fails before anything reaches systemd', async () => {
    const before = await manager.listUnitsByPrefix(PREFIX);
    await rejectsCode(start(['/bin/true'], { limits: { KillMode: 'none' } }), 'PROPERTY_NOT_ALLOWED');
    assert.equal(await manager.listUnitsByPrefix(PREFIX), before);
  });

  test('stopAndWait on a running sleep: the unit is stopped, unreferenced and gone', async () => {
    const session = await start(['/bin/sleep', '1000']);
    const state = await manager.serviceState(session.name);
    assert.is(state.activeState, 'active');
    assert.is(state.mainPid, session.mainPid);
    assert.ok(state.controlGroup.endsWith(`/${session.name}`), state.controlGroup);
    assert.is(state.invocationId.length, 16);
    const begun = performance.now();
    await manager.stopAndWait(session.name, STOP_MS);
    console.log(`# stopAndWait(sleep 1000): ${(performance.now() - begun).toFixed(1)} ms`);
    await assertGone(session.name);
    assert.is(drain(session.output), '');
  });

  test('kill sends the signal to the unit: SIGTERM ends sleep as code 2, status 15', async () => {
    const session = await start(['/bin/sleep', '1000']);
    await manager.kill(session.name, 'SIGTERM');
    assert.equal(await manager.waitForExit(session.name, WAIT), { code: 2, status: 15, result: 'success' });
    drain(session.output);
    await manager.stopAndWait(session.name, STOP_MS);
    await assertGone(session.name);
  });

  test('listUnitsByPrefix finds exactly the units of a prefix', async () => {
    const prefix = 'ocp-list-';
    const a = await start(['/bin/sleep', '1000'], {}, prefix);
    const b = await start(['/bin/sleep', '1000'], {}, prefix);
    const other = await start(['/bin/sleep', '1000']);
    try {
      assert.equal((await manager.listUnitsByPrefix(prefix)).sort(), [a.name, b.name].sort());
    } finally {
      for (const session of [a, b, other]) {
        await manager.stopAndWait(session.name, STOP_MS);
        drain(session.output);
      }
    }
    assert.equal(await manager.listUnitsByPrefix(prefix), []);
  });

  test('argv reaches the program literally: no $, ${X} or $$ expansion', async () => {
    const literal = '$HOME ${X} $$ %n \\ \'q\' "dq"\nnext line';
    const session = await start(['/bin/sh', '-c', 'printf %s "$1"', 'x', literal]);
    assert.equal(await manager.waitForExit(session.name, WAIT), { code: 1, status: 0, result: 'success' });
    assert.is(drain(session.output), literal);
    await manager.stopAndWait(session.name, STOP_MS);
  });

  test('the unit runs as the client in the given directory, with our environment and SIGPIPE default; a path is hidden only when asked', async () => {
    const script = [
      // The session helper fchdir()s into stdin; here it is enough that stdin is the directory.
      'echo "uid=$(id -u) stdin=$(readlink /proc/$$/fd/0) term=$TERM odd=$ODD"',
      // A killed writer (141) means SIGPIPE has its default action, as in a terminal.
      'yes | head -n1 >/dev/null; echo "pipe=${PIPESTATUS[0]}"',
      'if ls /run/opencode-pty >/dev/null 2>&1; then echo run=visible; else echo run=hidden; fi',
    ].join('\n');
    // The default profile sets no InaccessiblePaths (no mount namespace); the hardened one, or a caller, does.
    for (const [overrides, run] of [[{}, 'visible'], [{ inaccessiblePaths: ['/run/opencode-pty'] }, 'hidden']] as const) {
      const session = await start(['/bin/bash', '-c', script], { environment: { TERM: 'xterm-256color', ODD: '${X} $$' }, ...overrides });
      assert.equal(await manager.waitForExit(session.name, WAIT), { code: 1, status: 0, result: 'success' });
      assert.is(
        drain(session.output),
        `uid=${sandbox.client.uid} stdin=${sandbox.client.home} term=xterm-256color odd=\${X} $$\npipe=141\nrun=${run}\n`,
      );
      await manager.stopAndWait(session.name, STOP_MS);
    }
  });

  test('unitObjectPath is the path systemd gives the unit', async () => {
    const session = await start(['/bin/sleep', '1000']);
    const connection = await DbusConnection.open(sandbox.busAddress);
    try {
      const [path] = await connection.call({ path: MANAGER_PATH, interface: MANAGER_INTERFACE, member: 'GetUnit', signature: 's', body: [session.name] });
      assert.is(path, unitObjectPath(session.name));
    } finally {
      connection.close();
      await manager.stopAndWait(session.name, STOP_MS);
      drain(session.output);
    }
  });

  test('a connection hears only the units it watches: no signal about another unit reaches it', async () => {
    const listener = await DbusConnection.open(sandbox.busAddress);
    try {
      // Subscribed (systemd sends unit signals to the bus) but watching no unit: the bus delivers nothing.
      await listener.call({ path: MANAGER_PATH, interface: MANAGER_INTERFACE, member: 'Subscribe' });
      const heard: string[] = [];
      listener.onSignal((signal) => heard.push(signal.kind === 'properties-changed' ? signal.path : signal.kind === 'systemd-reconnected' ? signal.owner : signal.unit));
      // The manager's stop needs the unit's signals: it would hang without them.
      const session = await start(['/bin/sleep', '1000']);
      await manager.stopAndWait(session.name, STOP_MS);
      drain(session.output);
      // The bus answers this after delivering everything systemd sent before it.
      await listener.call({ destination: 'org.freedesktop.DBus', path: '/org/freedesktop/DBus', interface: 'org.freedesktop.DBus', member: 'GetId' });
      assert.equal(heard, []);
    } finally {
      listener.close();
    }
  });

  test('stopAndWait on a unit that never existed resolves at once', async () => {
    await manager.stopAndWait(unitNameFor(randomBytes(8), PREFIX), STOP_MS);
  });

  test('timings: start to exit of /bin/true, n = 20 (printed, not asserted)', async () => {
    const figures: number[] = [];
    for (let i = 0; i < 20; i++) {
      const begun = performance.now();
      const session = await start(['/bin/true']);
      await manager.waitForExit(session.name, WAIT);
      figures.push(performance.now() - begun);
      await manager.stopAndWait(session.name, STOP_MS);
      drain(session.output);
    }
    figures.sort((x, y) => x - y);
    console.log(`# startSession + waitForExit(/bin/true): ${figures[0]!.toFixed(1)} / ${figures[10]!.toFixed(1)} / ${figures[19]!.toFixed(1)} ms`);
    assert.equal(await manager.listUnitsByPrefix(PREFIX), [], 'no session unit is left');
  });
}

test.run();
