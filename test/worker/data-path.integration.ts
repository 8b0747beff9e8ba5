// The data path after the hand-off, end to end against real systemd: the helper in its unit speaks
// to the client, the worker writes the last frame. Drain without loss, FLOW, STOP sparing the helper,
// signals to the foreground group, and the hostile frame table answered with the codec's codes.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DEFAULT_LIMITS, DEFAULT_SESSION, type Config } from '../../src/config/schema.ts';
import { ErrorCode } from '../../src/protocol/index.ts';
import type { Sandbox } from '../sandbox/index.ts';
import { bytes } from '../protocol/fixtures.ts';
import { HOSTILE_DATA_PHASE } from '../protocol/hostile-frames.ts';
import { bootWorkerSandbox, expectNoUnits, startSession, workerConfig } from './harness.ts';

let sandbox: Sandbox;
let workDir: string;

test.before(async () => {
  ({ sandbox, workDir } = await bootWorkerSandbox('worker-data-path'));
});

test.after(async () => {
  await sandbox?.stop();
});

/** Sessions here run with the shipped limits and session settings (but the test allowlist), `overrides` on top. */
function session(argv: string[], overrides: { limits?: Partial<Config['limits']>; session?: Partial<Config['session']> } = {}) {
  const base = workerConfig(sandbox);
  const config: Config = {
    ...base,
    limits: { ...DEFAULT_LIMITS, ...overrides.limits },
    session: { ...base.session, ...DEFAULT_SESSION, environmentAllowlist: base.session.environmentAllowlist, ...overrides.session },
  };
  return startSession(sandbox, workDir, argv, { config });
}

test('a client slow to grant credit loses nothing: all 300000 bytes, then EXIT', async () => {
  const { worker, client } = await session(['/bin/sh', '-c', 'stty -opost; head -c 300000 /dev/zero | tr "\\0" a; exit 0'], {
    limits: { writeTimeoutMs: 200, drainTimeoutMs: 100 },
  });
  client.autoCredit = false;
  await client.waitFor('started');
  // Longer than every timeout the server has: withholding credit is never an error.
  await new Promise((resolve) => setTimeout(resolve, 800));
  client.send({ type: 'credit', bytes: 300_000 });
  const exit = await client.waitFor('exit');
  assert.equal(exit, { type: 'exit', code: 1, status: 0, result: 'success' });
  assert.is(client.output.length, 300_000);
  assert.is(client.frames.at(-1)?.type, 'exit');
  await expectNoUnits(sandbox, worker);
});

test('a client that grants credit but stops reading gets ERROR FLOW, never EXIT', async () => {
  const { worker, client } = await session(['/bin/sh', '-c', 'stty -opost; while :; do head -c 100000 /dev/zero | tr "\\0" b; done'], {
    limits: { writeTimeoutMs: 300 },
  });
  await client.waitForOutput('b');
  client.socket.pauseReading();
  client.send({ type: 'credit', bytes: 4 * 1024 * 1024 });
  await worker.waitFor('ended');
  client.socket.resumeReading();
  const error = await client.waitFor('error');
  assert.is(error.code, ErrorCode.FLOW);
  assert.not.ok(client.frames.some((frame) => frame.type === 'exit'));
  assert.is(client.frames.at(-1)?.type, 'error');
  await expectNoUnits(sandbox, worker);
});

test('STOP ends in STOPPED even when the program ignores SIGTERM and SIGHUP: SIGKILL spares the helper', async () => {
  const { worker, client } = await session(['/bin/sh', '-c', 'trap "" TERM HUP; echo up; while :; do sleep 1; done'], {
    session: { stopTimeoutSec: 1 },
  });
  await client.waitForOutput('up');
  client.send({ type: 'stop' });
  const stopped = await client.waitFor('stopped');
  assert.equal(stopped, { type: 'stopped' });
  assert.is(client.frames.at(-1)?.type, 'stopped');
  await expectNoUnits(sandbox, worker);
});

test('SIGNAL USR1 reaches a program that traps it and the session goes on', async () => {
  const { worker, client } = await session(['/bin/sh', '-c', 'trap "echo got-usr1" USR1; echo up; until read x; do :; done; echo "read:$x"']);
  await client.waitForOutput('up');
  client.send({ type: 'signal', signal: 10 });
  await client.waitForOutput('got-usr1');
  client.send({ type: 'input', data: Buffer.from('more\r') });
  await client.waitForOutput('read:more');
  const exit = await client.waitFor('exit');
  assert.is(exit.status, 0);
  await expectNoUnits(sandbox, worker);
});

test('RuntimeMaxSec: systemd stops the unit, the helper drains and reports, the client gets EXIT with result timeout', async () => {
  const { worker, client } = await session(['/bin/sh', '-c', 'echo up; exec sleep 100'], { session: { properties: { RuntimeMaxSec: 1 }, warmUnits: 0 } });
  await client.waitForOutput('up');
  const exit = await client.waitFor('exit');
  assert.is(exit.result, 'timeout');
  assert.is(client.frames.at(-1)?.type, 'exit');
  await expectNoUnits(sandbox, worker);
});

test('RuntimeMaxSec in a warm unit: the worker\'s wall clock from START ends it as systemd would, EXIT with result timeout', async () => {
  const { worker, client } = await session(['/bin/sh', '-c', 'echo up; exec sleep 100'], { session: { properties: { RuntimeMaxSec: 1 }, warmUnits: 1 } });
  await client.waitForOutput('up');
  const exit = await client.waitFor('exit');
  assert.is(exit.result, 'timeout');
  assert.is(client.frames.at(-1)?.type, 'exit');
  assert.match(worker.stderr, 'in a warm unit');
  assert.match(worker.stderr, 'its wall clock (RuntimeMaxSec) ran out');
  await expectNoUnits(sandbox, worker);
});

test('a helper killed without its report: the worker writes nothing and closes; no unit is left', async () => {
  const { worker, client } = await session(['/bin/sh', '-c', 'echo up; exec sleep 100']);
  const started = await client.waitFor('started');
  await client.waitForOutput('up');
  const killed = await sandbox.systemctl('kill', '--kill-who=main', '--signal=SIGKILL', started.unit);
  assert.is(killed.code, 0, killed.stderr);
  await client.closed();
  assert.not.ok(client.frames.some((frame) => ['exit', 'stopped', 'error'].includes(frame.type)), client.frames.map((f) => f.type).join(','));
  await expectNoUnits(sandbox, worker);
});

test('hostile data-phase frames through the whole session are answered with the codec table\'s ERROR codes', async () => {
  for (const hostile of HOSTILE_DATA_PHASE) {
    const { worker, client } = await session(['/bin/sh', '-c', 'echo up; exec sleep 100']);
    await client.waitForOutput('up');
    client.socket.write(bytes(hostile.hex));
    const error = await client.waitFor('error');
    assert.is(error.code, hostile.wire, `${hostile.name}: ${error.message}`);
    assert.is(client.frames.at(-1)?.type, 'error', hostile.name);
    await client.closed();
    await expectNoUnits(sandbox, worker);
  }
});

test.run();
