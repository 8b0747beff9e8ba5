// `node --import tsx test/torture/backlog.ts [BACKLOG…]`: the agent's start time against the
// socket's accept queue length. For each Backlog= (a socket drop-in; the shipped unit's value when
// none is given), in alternating rounds: a flood of 1,000 connections at once from outside the agent
// unit (refused at accept) while the MainPID and a child of the agent start sessions one after
// another; prints starts, failures, p50/p99 and the broker's CPU per Backlog.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { bootSandbox, SOCKET_GROUP } from '../sandbox/index.ts';
import { BROKER_UNIT, SOCKET_UNIT } from '../sandbox/deploy.ts';
import { outside, underFlood } from './bad-peers.ts';
import { Agent, buildAgent } from '../support/agent.ts';
import { deploySupervisor } from '../support/supervisor.ts';
import { percentile } from './harness.ts';
import type { FloodFigures, TortureContext } from './report.ts';

const args = process.argv.slice(2);
const rounds = Number(args.find((arg) => arg.startsWith('--rounds='))?.slice(9) ?? 2);
const seconds = Number(args.find((arg) => arg.startsWith('--seconds='))?.slice(10) ?? 10);
const backlogs = args.filter((arg) => !arg.startsWith('--')).map(Number);
const DROP_IN = `/etc/systemd/system/${SOCKET_UNIT}.d/backlog.conf`;
const note = (message: string) => process.stderr.write(`${new Date().toISOString()} ${message}\n`);

const built = spawnSync(process.execPath, [fileURLToPath(new URL('../../build.mjs', import.meta.url))], { stdio: 'inherit' });
if (built.status !== 0) throw new Error('node build.mjs failed');
await buildAgent();
const sandbox = await bootSandbox({ name: 'torture-backlog' });
const results = new Map<string, FloodFigures[]>();
try {
  await deploySupervisor(sandbox, { limits: { idleExitMs: 600_000 } });
  const ctx: TortureContext = { sandbox, driver: await Agent.start(sandbox), scale: 'full', note };
  const values = backlogs.length ? backlogs : [undefined];
  for (let round = 0; round < rounds; round += 1) {
    for (const backlog of values) {
      const label = backlog === undefined ? 'shipped' : String(backlog);
      // A new Backlog= needs a new listening socket: stop the broker, then restart the socket.
      await sandbox.systemctl('stop', BROKER_UNIT);
      await sandbox.install([{ content: backlog === undefined ? '' : `[Socket]\nBacklog=${backlog}\n`, to: DROP_IN }]);
      await sandbox.systemctl('daemon-reload');
      await sandbox.systemctl('restart', SOCKET_UNIT);
      const [warm] = await ctx.driver.sessions(1, ['true']);
      if (!warm?.ok) throw new Error(`warm-up failed: ${JSON.stringify(warm)}`);
      const durationMs = seconds * 1000;
      if (backlog === values[0]) {
        // The anchor in the same run: the same starts with no flood, at this moment's machine load.
        const quiet = await underFlood(ctx, durationMs, async () => undefined, true);
        note(`no flood, round ${round + 1}: ${JSON.stringify(quiet)}`);
        results.set('no flood', [...(results.get('no flood') ?? []), quiet]);
      }
      let flood: unknown;
      const figures = await underFlood(
        ctx,
        durationMs,
        async () => (flood = await outside(ctx, { as: 'client', groups: [SOCKET_GROUP.gid] }, { flood: { concurrency: 1000, durationMs, mode: 'silent' } })),
        true,
      );
      note(`Backlog ${label}, round ${round + 1}: ${JSON.stringify(figures)}; flood ${JSON.stringify(flood)}`);
      results.set(label, [...(results.get(label) ?? []), figures]);
    }
  }
} finally {
  await sandbox.stop();
}
console.log('\n| Backlog | agent starts | failures | p50 ms | p99 ms | broker CPU |\n|---|---|---|---|---|---|');
for (const [label, runs] of results) {
  const starts = runs.reduce((sum, r) => sum + r.starts, 0);
  const failures = runs.reduce((sum, r) => sum + r.failures, 0);
  // Percentiles of the rounds' own percentiles would hide a bad round: report the worst round's.
  const p50 = percentile(runs.map((r) => r.p50Ms), 50);
  const p99 = Math.max(...runs.map((r) => r.p99Ms));
  const cpu = runs.reduce((sum, r) => sum + r.brokerCpu, 0) / runs.length;
  console.log(`| ${label} | ${starts} | ${failures} | ${p50.toFixed(0)} | ${p99.toFixed(0)} | ${(cpu * 100).toFixed(0)}% of a core |`);
}
