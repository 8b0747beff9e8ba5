// A session never outlives its end: with the broker unit SIGKILLed (broker and every worker gone)
// under a program that ignores SIGHUP and SIGTERM, the session helper ends it itself in steps
// (hang-up, SIGTERM, SIGKILL, session.stopTimeoutSec apart), so its unit is gone and the client
// answered (its connection closed: no worker is left to write a last frame) within
// 2 × stopTimeoutSec + 5 s, whether or not the client sends STOP. Before, the unit ran until the next
// broker's start reaped it as an orphan, and a client's STOP got no answer.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Sandbox } from '../sandbox/index.ts';
import { BROKER_UNIT } from '../sandbox/deploy.ts';
import type { Agent } from '../support/agent.ts';
import { bootSupervisor } from '../support/supervisor.ts';
import { until } from '../support/wait.ts';

/** session.stopTimeoutSec's default, which the helper takes when not told (main.c). */
const STOP_SEC = 5;
const BOUND_MS = 2 * STOP_SEC * 1000 + 5000;
const PROGRAM = ['sh', '-c', 'trap "" HUP TERM; echo ready; while :; do sleep 1; done'];
let sandbox: Sandbox;
let agent: Agent;

test.before(async () => {
  ({ sandbox, agent } = await bootSupervisor('helper-broker-killed'));
});

test.after(async () => {
  await sandbox?.stop();
});

async function sessionUnits(): Promise<string[]> {
  const listed = (await sandbox.systemctl('list-units', '--all', '--plain', '--no-legend', 'opencode-pty-session-*')).stdout;
  return listed.split('\n').map((line) => line.trim().split(/\s+/)[0]!).filter(Boolean);
}

async function pgrep(pattern: string): Promise<number[]> {
  return (await sandbox.exec(['pgrep', '-f', pattern])).stdout.split('\n').filter(Boolean).map(Number);
}

async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)));
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

async function brokerKilledUnder(stop: boolean, program = PROGRAM, marker = 'while :; do sleep 1'): Promise<void> {
  const ran = agent.session(program);
  ran.catch(() => undefined);
  await until(async () => (await sessionUnits()).length === 1 && (await pgrep(marker)).length > 0, 20_000, 'the session and its program');
  await sandbox.systemctl('kill', '--signal=SIGKILL', BROKER_UNIT);
  const killed = Date.now();
  await until(async () => (await sandbox.systemctl('show', '--property=ActiveState', '--value', BROKER_UNIT)).stdout.trim() !== 'active', 10_000, 'the broker unit to die');
  let asked = killed;
  if (stop) {
    // The CLI sends STOP on SIGTERM (src/cli/run.ts).
    const [cli] = await pgrep('cli.js run');
    assert.ok(cli, 'the client runs');
    await sandbox.exec(['kill', '-TERM', String(cli)]);
    asked = Date.now();
  }
  const result = await within(ran, BOUND_MS, stop ? 'the client answered after its STOP' : 'the client answered');
  const answered = Date.now();
  assert.match(result.stdout, 'ready');
  assert.ok(answered - asked < BOUND_MS, `answered ${answered - asked} ms after ${stop ? 'STOP' : 'the kill'}`);
  await until(async () => (await sessionUnits()).length === 0, Math.max(0, killed + BOUND_MS - Date.now()), 'the session unit to be gone', async () => (await sandbox.systemctl('list-units', '--all', 'opencode-pty-session-*')).stdout);
  assert.equal(await pgrep(marker), [], 'no process of the session is left');
}

test('the broker unit SIGKILLed under a program that ignores SIGHUP and SIGTERM: the unit is gone, the client answered', async () => {
  await brokerKilledUnder(false);
});

test('the same with a STOP from the client after the kill: answered within the bound', async () => {
  await brokerKilledUnder(true);
});

// The helper runs as the program's user, so the program may signal it (kill(2) asks for the same uid
// only; a non-dumpable process is not spared): SIGSTOP to its parent freezes the helper, whose own
// end then never comes (found by a security review). What bounds such a session is the next broker's
// start, on the next connection: its orphan cleanup stops the unit (docs/security.md, "A program
// inside a session").
test('a program that stops its helper (SIGSTOP to its parent) and ignores SIGHUP and SIGTERM: the next broker stops its unit', async () => {
  const marker = 'while :; do sleep 2';
  const ran = agent.session(['sh', '-c', `trap "" HUP TERM; echo ready; sleep 1; kill -STOP $PPID; ${marker}; done`]);
  ran.catch(() => undefined);
  await until(async () => (await sessionUnits()).length === 1 && (await pgrep(marker)).length > 0, 20_000, 'the session and its program');
  await sandbox.systemctl('kill', '--signal=SIGKILL', BROKER_UNIT);
  await until(async () => (await sandbox.systemctl('show', '--property=ActiveState', '--value', BROKER_UNIT)).stdout.trim() !== 'active', 10_000, 'the broker unit to die');
  const next = await agent.session(['true']);
  assert.is(next.code, 0, `a session beside the frozen one: ${JSON.stringify(next)}`);
  await until(async () => (await sessionUnits()).length === 0, 2 * BOUND_MS, 'the orphan cleanup to stop the unit', async () => (await sandbox.systemctl('list-units', '--all', 'opencode-pty-session-*')).stdout);
  await within(ran, BOUND_MS, 'the client answered once its unit was stopped');
  assert.equal(await pgrep(marker), [], 'no process of the session is left');
});

test.run();
