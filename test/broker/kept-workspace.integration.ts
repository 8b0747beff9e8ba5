// A kept session under the workspace profile (its helper confined by Landlock from before the fork)
// outlives the supervisor as any kept session does: the next broker reaches its helper through the
// rendezvous (the helper reads the supervisor's cgroup under /sys, which the profile lets it read), and
// ATTACH from the last offset seen gives the rest of the output.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHash } from 'node:crypto';
import type { Sandbox } from '../sandbox/index.ts';
import type { Agent } from '../support/agent.ts';
import { bootSupervisor, brokerPid, sessionUnits } from '../support/supervisor.ts';
import { until } from '../support/wait.ts';
import { BROKER_UNIT } from '../sandbox/deploy.ts';

let sandbox: Sandbox;
let agent: Agent;
let work: string;

test.before(async () => {
  ({ sandbox, agent } = await bootSupervisor('kept-workspace', { session: { profile: 'workspace' } }));
  const { uid, gid, home } = sandbox.client;
  work = `${home}/project`;
  const made = await sandbox.exec(['install', '-d', '-o', String(uid), '-g', String(gid), '-m', '0755', work]);
  assert.is(made.code, 0, made.stderr);
});

test.after(async () => {
  await sandbox?.stop();
});

const sha = (text: string) => createHash('sha256').update(text).digest('hex');
const seq = (n: number) => Array.from({ length: n }, (_, i) => `${i + 1}\r\n`).join('');

test('a memory budget under the workspace profile is no longer refused BUDGET: the guarantee check judges it (NOT_ENFORCED on this host), nothing stays', async () => {
  const refused = await agent.keep({ op: 'start', name: 'm', argv: ['true'], keepMs: 120_000, cwd: work, budgets: { memoryBytes: 256 << 20 } });
  assert.is(refused.error, 'NOT_ENFORCED', refused.message);
  assert.match(refused.message!, /this host does not enforce the memory budget/);
  await until(async () => (await sessionUnits(sandbox)).length === 0, 10_000, 'no session unit left');
});

test('a kept workspace session survives the supervisor: ATTACH after kill -9 gives the rest; the program stayed confined', async () => {
  const n = 6000;
  const expected = seq(n);
  // Confined throughout: the home is unreadable before and after the supervisor goes.
  const argv = ['sh', '-c', `k=0; while [ $k -lt 60 ]; do seq $((k*100+1)) $(((k+1)*100)); k=$((k+1)); sleep 0.02; done; cat ~/.bashrc 2>/dev/null || touch home-unreadable; read line; exit 4`];
  const started = await agent.keep({ op: 'start', name: 'w', argv, keepMs: 120_000, label: 'workspace', read: { bytes: 1000 }, cwd: work });
  assert.is(started.error, undefined, started.message);
  const first = await agent.keep({ op: 'detach', name: 'w' });
  await sandbox.systemctl('kill', '--signal=SIGSTOP', BROKER_UNIT);
  await sandbox.systemctl('kill', '--signal=SIGKILL', BROKER_UNIT);
  await until(async () => (await brokerPid(sandbox)) === 0, 10_000, 'the broker gone');
  await sandbox.systemctl('reset-failed', BROKER_UNIT);
  assert.is((await sessionUnits(sandbox)).length, 1, 'the session runs on without a supervisor');
  const back = await agent.keep({ op: 'attach', name: 'w2', id: started.id!, from: first.offset, role: 'control', read: { bytes: expected.length - first.offset! } });
  assert.is(back.error, undefined, back.message);
  assert.is(first.sha256, sha(expected.slice(0, first.bytes!)));
  assert.is(back.sha256, sha(expected.slice(first.offset!)), 'the rest, through the adopted rendezvous');
  await agent.keep({ op: 'write', name: 'w2', data: 'done\r' });
  const end = await agent.keep({ op: 'read', name: 'w2', read: { untilEnd: true, ms: 10_000 } });
  const last = end.end as { reason: string; status: number; result: string } | undefined;
  assert.equal([last?.reason, last?.status, last?.result], ['exit', 4, 'exit-code'], JSON.stringify(end));
  assert.is((await sandbox.exec(['test', '-e', `${work}/home-unreadable`])).code, 0, 'the program could not read the home');
});

test.run();
