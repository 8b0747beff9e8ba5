// A session helper that speaks its control channel as it likes (hostile-helper.c), against a real
// worker and real systemd: the helper runs as the client's user, so whatever corrupted it (the
// client's bytes) would own every message root reads from it. None of them may freeze the worker,
// write lines of the attacker's choosing into root's journal, or leave the worker serving more sessions.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { HELPER_MODE } from '../sandbox/deploy.ts';
import type { Sandbox } from '../sandbox/index.ts';
import { bootWorkerSandbox, sessionUnits, WorkerProcess, workerConfig } from './harness.ts';
import { bounded } from './stall-report.ts';

const SOURCE = fileURLToPath(new URL('./hostile-helper.c', import.meta.url));
const HOSTILE_INSIDE = '/opt/opencode-pty/hostile-helper';
/** A frozen worker fails the test here instead of hanging it. */
const BOUND_MS = 20_000;

let sandbox: Sandbox;
let workDir: string;
let scratch: string;

/** `promise`, or a failure saying `what` at BOUND_MS (stall-report.ts). */
const within = <T>(promise: Promise<T>, what: string): Promise<T> => bounded(what, promise, async () => '', BOUND_MS);

test.before(async () => {
  ({ sandbox, workDir } = await bootWorkerSandbox('worker-hostile-helper'));
  scratch = mkdtempSync(join(tmpdir(), 'opencode-pty-hostile-helper-'));
  const binary = join(scratch, 'hostile-helper');
  execFileSync('cc', ['-std=c11', '-D_GNU_SOURCE', '-Wall', '-Wextra', '-Werror', '-O2', '-o', binary, SOURCE]);
  // Installed as the real helper is (root-owned, 0711), so the worker accepts it.
  await sandbox.install([{ from: binary, to: HOSTILE_INSIDE, mode: HELPER_MODE }]);
});

test.after(async () => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
  await sandbox?.stop();
});

/** A worker running the hostile helper in `mode`, its session STARTED. */
async function hostileSession(mode: string, reuse = false, version?: number) {
  const worker = new WorkerProcess(sandbox, workerConfig(sandbox, { helperPath: HOSTILE_INSIDE }));
  await worker.waitFor('ready');
  worker.messages.splice(0);
  const client = worker.connect(version === undefined ? { reuse } : { reuse, version });
  client.start(workDir, [mode]);
  await within(client.waitFor('started'), 'STARTED');
  // The worker reports its start once the helper named its program: its messages flow from then on.
  await within(worker.waitFor('started'), "the worker's start report");
  return { worker, client };
}

test('a helper that floods STOP messages has its channel failed at the second (the worker decoded them at a full core); a hang-up still ends the session', async () => {
  const { worker, client } = await hostileSession('stop-flood');
  // The helper sends one STOP for the client's one STOP; a second is a broken helper.
  client.close();
  const ended = await within(worker.waitFor('ended'), `the worker's end; its log: ${worker.stderr.slice(-2000)}`);
  assert.is(ended.reusable, false);
  assert.match(worker.stderr, 'a second STOP');
  assert.is(await within(worker.exited, 'worker exit'), 0, worker.stderr);
  assert.equal(await sessionUnits(sandbox), []);
});

test("a helper's end report cannot start a line of root's journal", async () => {
  const { worker, client } = await hostileSession('end-lines');
  await within(client.closed(), 'the connection closed');
  await within(worker.waitFor('ended'), 'the worker ended');
  assert.is(await within(worker.exited, 'worker exit'), 0, worker.stderr);
  const forged = worker.stderr.split('\n').filter((line) => /^<\d>worker\[\d+\]: session opencode-pty-session-0\.service/.test(line));
  assert.equal(forged, [], worker.stderr);
  assert.match(worker.stderr, 'END text');
  assert.equal(await sessionUnits(sandbox), []);
});

test("the helper's FIGURES are its client's end record, bounded as any figure; root's journal keeps systemd's", async () => {
  const { worker, client } = await hostileSession('figures', false, 2);
  const exit = await within(client.waitFor('exit'), 'EXIT');
  assert.equal([exit.code, exit.status], [1, 0], 'the program\'s end as systemd recorded it');
  assert.equal(exit.accounting, { cpuUsageNsec: 4_242_000, memoryBytes: null, ioReadBytes: 7, ioWriteBytes: 0, tasks: null, inputBytes: 0, outputBytes: 0, durationUsec: exit.accounting!.durationUsec });
  await within(worker.waitFor('ended'), 'the worker ended');
  assert.is(await within(worker.exited, 'worker exit'), 0, worker.stderr);
  // The journal's line has systemd's figures, never the helper's word.
  assert.match(worker.stderr, /accounting: exit, cpu_usage_nsec=(\d+|unavailable) /);
  assert.not.match(worker.stderr, /4242000|memory_current_bytes=65536/);
  assert.equal(await sessionUnits(sandbox), []);
});

test('a worker whose helper broke the control channel is not offered for another session', async () => {
  const { worker, client } = await hostileSession('junk', true);
  await within(client.closed(), 'the connection closed');
  const ended = await within(worker.waitFor('ended'), 'the worker ended');
  assert.match(worker.stderr, 'unknown message type 0x99');
  assert.equal(ended, { type: 'ended', reason: 'error', reusable: false });
  assert.is(await within(worker.exited, 'worker exit'), 0, worker.stderr);
  assert.equal(await sessionUnits(sandbox), []);
});

test.run();
