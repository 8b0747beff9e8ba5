// The session helper's end (native/session/end.c): every pair of end causes fired in both orders, one
// right after the other, gives exactly one END report, the documented reason, and a helper gone within
// 2 × stopTimeoutSec + 5 s, with a program that ignores SIGHUP and SIGTERM: an end the helper drives
// itself (client gone, write timeout, worker gone or TERMINATE) ends the program in steps (hang-up,
// SIGTERM, SIGKILL after --stop-timeout-sec each), as the worker's stop does.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HelperRun, TERMINATE, T, WINDOW, frame, type Ended } from './helper-harness.ts';

const STOP_SEC = 1;
const BOUND_MS = 2 * STOP_SEC * 1000 + 5000;
// Ignores the hang-up and SIGTERM (so only SIGKILL ends it); USR1 makes it exit 7, USR2 makes it flood.
const PROGRAM = ['24', '80', 'sh', '-c', 'trap "" HUP TERM; trap "exit 7" USR1; trap "flood=1" USR2; echo ready; while :; do if [ -n "$flood" ]; then head -c 100000 /dev/zero | tr "\\0" z; else sleep 0.05; fi; done'];

type Cause = 'exit' | 'hangup' | 'stop' | 'flow' | 'worker-loss' | 'terminate';
const CAUSES: Cause[] = ['exit', 'hangup', 'stop', 'flow', 'worker-loss', 'terminate'];
const REASON: Record<Cause, string> = { exit: 'exit', hangup: 'client-gone', stop: 'stop', flow: 'flow', 'worker-loss': 'terminated', terminate: 'terminated' };

/** docs/architecture.md "Who ends a session": the first end wins. STOP is a request, not an end: the
 * program's end after it reports "stop", and another end before that wins. */
function documented(first: Cause, second: Cause): string {
  if (first !== 'stop') return REASON[first];
  return second === 'exit' ? 'stop' : REASON[second];
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {}
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Plays the worker too: after the client's STOP, the program is killed one step later, as its KILL step would. */
async function startRun(): Promise<{ run: HelperRun; pid: number }> {
  const run = new HelperRun(PROGRAM, { options: [`--stop-timeout-sec=${STOP_SEC}`, '--write-timeout-ms=100'] });
  await run.waitFor('ready');
  await run.waitForMessage('pid');
  const named = run.messages.find((m) => m.type === 'pid');
  const pid = named?.type === 'pid' ? named.pid : 0;
  assert.ok(pid > 0, 'the program is named');
  void run.waitForMessage('stop').then(
    () => setTimeout(() => signal(pid, 'SIGKILL'), STOP_SEC * 1000),
    () => undefined,
  );
  return { run, pid };
}

function fire(cause: Cause, run: HelperRun, pid: number): void {
  switch (cause) {
    case 'exit':
      return signal(pid, 'SIGUSR1');
    case 'hangup':
      return run.client.shutdown('write');
    case 'stop':
      return run.send(frame(T.STOP));
    case 'flow':
      signal(pid, 'SIGUSR2');
      run.client.pauseReading();
      // Credit for far more than the socket holds: output waits with credit, the client reads nothing.
      return run.grant(4 * WINDOW);
    case 'worker-loss':
      return run.control.shutdown('write');
    case 'terminate':
      return void run.control.write(TERMINATE);
  }
}

/** The helper's end, or a failure once the bound has passed. */
async function endWithin(run: HelperRun, ms: number): Promise<Ended> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no end within ${ms} ms`)), ms)));
  // A paused client would keep the harness from reading the end: reading resumes once the report is in.
  void run.waitForMessage('end').then(() => run.client.resumeReading(), () => undefined);
  try {
    return await Promise.race([run.ended, late]);
  } finally {
    clearTimeout(timer);
  }
}

async function race(first: Cause, second: Cause, settle: boolean): Promise<void> {
  const { run, pid } = await startRun();
  fire(first, run, pid);
  // Settled: the first cause has taken effect (its report, or for STOP its message) before the second.
  if (settle) await run.waitForMessage(first === 'stop' ? 'stop' : 'end');
  else await new Promise((resolve) => setImmediate(resolve));
  const fired = Date.now();
  fire(second, run, pid);
  const ended = await endWithin(run, BOUND_MS);
  const what = `${first} then ${second}${settle ? ' (settled)' : ''}`;
  const ends = run.messages.filter((m) => m.type === 'end');
  assert.is(ends.length, 1, `${what}: one report`);
  const allowed = settle ? [documented(first, second)] : [documented(first, second), documented(second, first)];
  assert.ok(allowed.includes(ended.report!.reason), `${what}: ${ended.report!.reason}, documented ${allowed.join(' or ')}`);
  assert.ok(Date.now() - fired < BOUND_MS, `${what}: ended within ${BOUND_MS} ms`);
  assert.ok(ended.code === 7 || ended.signal === 'SIGKILL', `${what}: the helper ends as its program did (${ended.code ?? ended.signal})`);
  assert.not.ok(alive(pid), `${what}: the program is gone`);
}

test('the worker gone under a program that ignores SIGHUP and SIGTERM: hang-up, SIGTERM, SIGKILL, one step a stop timeout', async () => {
  const { run, pid } = await startRun();
  const fired = Date.now();
  fire('worker-loss', run, pid);
  const ended = await endWithin(run, BOUND_MS);
  const took = Date.now() - fired;
  assert.is(ended.report?.reason, 'terminated');
  assert.is(ended.signal, 'SIGKILL');
  assert.ok(took >= 2 * STOP_SEC * 1000 - 50, `the steps wait for the program (${took} ms)`);
  assert.ok(took < 2 * STOP_SEC * 1000 + 5000, `${took} ms`);
  assert.not.ok(alive(pid));
});

test('STOP with the worker gone: the client is answered (its connection closed) within the bound', async () => {
  const { run, pid } = await startRun();
  fire('worker-loss', run, pid);
  run.send(frame(T.STOP));
  const ended = await endWithin(run, BOUND_MS);
  assert.is(ended.report?.reason, 'terminated');
  assert.not.ok(alive(pid));
});

// Every ordered pair of distinct causes, fired back to back and settled; a few at a time (each waits
// for the steps, up to 2 × STOP_SEC, while the helpers mostly sleep).
const pairs = CAUSES.flatMap((first) => CAUSES.filter((second) => second !== first).map((second) => [first, second] as const));
for (const settle of [false, true]) {
  test(`every pair of end causes in both orders${settle ? ', the first settled' : ', back to back'}: one report, the documented one`, async () => {
    for (let i = 0; i < pairs.length; i += 10) await Promise.all(pairs.slice(i, i + 10).map(([first, second]) => race(first, second, settle)));
  });
}

test.run();
