// SIGNAL from the client once the program has ended and been reaped (the helper still relays what its
// terminal holds, waiting for credit): the program's pid is free by then, and the next process to get
// it is not the session's. Run in a pid namespace of its own (the helper its init), where
// ns_last_pid gives that pid to a stand-in for any other process of the same user, deterministically.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HelperRun, signal } from './helper-harness.ts';
import { until } from '../support/wait.ts';

const WINDOW = 262144;
/** Output beyond the client's window that the terminal holds once the program has ended. */
const HELD = 2000;

/** The process's status, or '' once it is gone. */
function statusOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return '';
  }
}

const childrenOf = (pid: number): number[] =>
  readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number);

test('helper: SIGNAL after the program was reaped reaches no process that took its pid', async () => {
  const script = `head -c ${WINDOW + HELD} /dev/zero | tr '\\0' a; exit 0`;
  const run = new HelperRun(['24', '80', 'sh', '-c', script], { autoCredit: false, wrap: ['unshare', '--pid', '--fork', '--kill-child'] });
  try {
    await run.until('the whole window', () => run.received === WINDOW);
    await run.waitForMessage('pid');
    const programPid = run.messages.find((m) => m.type === 'pid');
    assert.equal(programPid, { type: 'pid', pid: 2 }, 'the program is pid 2 of the namespace');
    let helper = 0;
    await until(() => {
      helper = childrenOf(run.child.pid!)[0] ?? 0;
      return helper > 0 && childrenOf(helper).length === 0;
    }, 10_000, 'the helper in its namespace, its program reaped');
    // Another process gets pid 2: the stand-in for any process of the user outside the session.
    const other = spawn('nsenter', ['-t', String(helper), '-p', '--', 'sh', '-c', 'echo 1 > /proc/sys/kernel/ns_last_pid; sleep 1000 & echo $!; wait'], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      const nsPid = await new Promise<string>((resolve) => other.stdout!.once('data', (data: Buffer) => resolve(data.toString().trim())));
      assert.is(nsPid, '2', 'the other process took the program\'s pid');
      let victim = 0;
      await until(() => {
        const shell = childrenOf(other.pid!)[0];
        victim = shell ? (childrenOf(shell)[0] ?? 0) : 0;
        return victim > 0;
      }, 10_000, 'the other process');
      // SIGKILL, then one byte of credit: once that byte arrives, the SIGNAL before it has been acted on,
      // and the helper (this namespace's init: its end would kill every process in it) still waits.
      run.send(signal(9));
      run.grant(1);
      await run.until('one more byte', () => run.received === WINDOW + 1);
      // Alive, not a zombie, no SIGKILL pending (a killed one may be reaped already: no status at all).
      const status = statusOf(victim);
      const state = /^State:\s+(\S)/m.exec(status)?.[1];
      const pending = BigInt(`0x${/^ShdPnd:\s+(\S+)/m.exec(status)?.[1] ?? '0'}`) | BigInt(`0x${/^SigPnd:\s+(\S+)/m.exec(status)?.[1] ?? '0'}`);
      assert.ok(state !== undefined && state !== 'Z' && (pending & (1n << 8n)) === 0n, `the other process was sent SIGKILL (state ${state}, pending 0x${pending.toString(16)})`);
    } finally {
      other.kill('SIGKILL');
    }
    run.grant(HELD - 1);
    const ended = await run.ended;
    assert.is(ended.report?.reason, 'exit');
  } finally {
    run.child.kill('SIGKILL');
  }
});

test.run();
