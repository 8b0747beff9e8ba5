// STOP's steps against a program that fights them, end to end with one session slot: the program
// ignores SIGTERM and answers the hang-up by stopping its session helper (SIGSTOP to its parent: it runs
// as the same user), so neither the helper's relay nor its KILL step can act. The unit must still be
// gone within the slot-wait bound (stoppingSessionBoundMs: 1 s + 2 × stopTimeoutSec + the unit's stop
// wait), through systemd's own stop, and a start made right after the STOP, which finds the one slot
// held by that stopping session, must wait for it and run, not be refused SESSION_LIMIT.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Sandbox } from '../sandbox/index.ts';
import { BROKER_UNIT, INSTALL_DIR, SOCKET_PATH } from '../sandbox/deploy.ts';
import type { Agent } from '../support/agent.ts';
import { bootSupervisor, sessionUnits } from '../support/supervisor.ts';
import { until } from '../support/wait.ts';

const STOP_TIMEOUT_SEC = 1;
const OPERATION_TIMEOUT_MS = 10_000;
/** stoppingSessionBoundMs for this config: 1 s + 2 × 1 s + max(10 s, 2 × 1 s + 5 s). */
const BOUND_MS = 1000 + 2 * STOP_TIMEOUT_SEC * 1000 + Math.max(OPERATION_TIMEOUT_MS, 2 * STOP_TIMEOUT_SEC * 1000 + 5000);

let sandbox: Sandbox;
let agent: Agent;

test.before(async () => {
  ({ sandbox, agent } = await bootSupervisor('broker-stop-bound', {
    limits: { maxSessions: 1, idleExitMs: 600_000, operationTimeoutMs: OPERATION_TIMEOUT_MS },
    session: { stopTimeoutSec: STOP_TIMEOUT_SEC },
  }));
});

test.after(async () => {
  await sandbox?.stop();
});

/** Run by a child of the agent: the fighting session, its STOP (the CLI's SIGTERM), then at once a
 * second start for the one slot; prints when each ended (ms after the STOP) and how. */
const SCRIPT = `
set -u
cli="/usr/bin/node ${INSTALL_DIR}/cli.js run --socket ${SOCKET_PATH} --"
out=$(mktemp)
$cli sh -c 'trap "kill -STOP \\$PPID" HUP; trap "" TERM; echo ready; while :; do sleep 0.2; done' >"$out" 2>&1 &
first=$!
i=0
while ! grep -q ready "$out"; do i=$((i+1)); [ $i -gt 200 ] && { echo "never ready: $(cat "$out")"; exit 2; }; sleep 0.05; done
t0=$(date +%s%3N)
kill -TERM $first
sleep 0.2
$cli sh -c 'echo second-ran' >"$out.2" 2>&1
second=$?
t2=$(date +%s%3N)
wait $first
first_code=$?
t1=$(date +%s%3N)
echo "first=$first_code firstMs=$((t1-t0)) second=$second secondMs=$((t2-t0)) secondOut=$(tr -d '\\r\\n' <"$out.2")"
`;

test('a program that ignores SIGTERM and stops its helper at the hang-up: its unit is gone within the bound, and the start that waited for its slot runs', async () => {
  const run = await agent.command<{ code: number | null; stdout: string; stderr: string }>({ run: ['sh', '-c', SCRIPT] });
  const line = run.stdout.trim();
  console.log(`# ${line} (bound ${BOUND_MS} ms)`);
  const figures = Object.fromEntries([...line.matchAll(/(\w+)=(\S*)/g)].map((m) => [m[1], m[2]]));
  assert.is(run.code, 0, `${run.stdout}\n${run.stderr}\n${await sandbox.journal(BROKER_UNIT)}`);
  assert.is(figures.second, '0', `the second start was refused or failed: ${line}`);
  assert.is(figures.secondOut, 'second-ran', line);
  assert.ok(Number(figures.secondMs) < BOUND_MS, `the second start ended ${figures.secondMs} ms after the STOP, past the bound ${BOUND_MS} ms`);
  // The helper was stopped: only systemd's stop (after 1 s + 2 × stopTimeoutSec) could end the unit.
  assert.ok(Number(figures.secondMs) >= 1000 + 2 * STOP_TIMEOUT_SEC * 1000, `ended before the unit's stop: ${line}`);
  assert.ok(Number(figures.firstMs) < BOUND_MS, `the stopped session ended ${figures.firstMs} ms after its STOP: ${line}`);
  await until(async () => (await sessionUnits(sandbox)).length === 0, 10_000, 'no session unit left');
});

test.run();
