// `node --import tsx test/torture/inside-flood.ts [--rounds=N] [--seconds=S] [--pace=MS] [--modes=burst,reconnect,silent] [--name=SANDBOX]`:
// the agent's MainPID starting sessions one after another while a child of the agent unit floods the
// socket (64 lanes; agent-main.ts flood() says what each mode does), alternated round by round with the same starts and no
// flood; prints p50/p99 of each, the flood's connections and answers, and the broker's CPU.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bootSandbox } from '../sandbox/index.ts';
import { Agent, buildAgent } from '../support/agent.ts';
import { brokerPid, deploySupervisor, stopBroker } from '../support/supervisor.ts';
import { INSTALL_DIR } from '../sandbox/deploy.ts';
import { type FloodMode, insideFloodRound, pooled } from './bad-peers.ts';
import type { FloodFigures, TortureContext } from './report.ts';

const args = process.argv.slice(2);
const option = (name: string, fallback: number) => Number(args.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback);
const rounds = option('rounds', 3);
const seconds = option('seconds', 10);
const paceMs = option('pace', 200);
const modes = (args.find((arg) => arg.startsWith('--modes='))?.slice(8) ?? 'burst').split(',') as FloodMode[];
const profile = args.includes('--profile');
const root = fileURLToPath(new URL('../../', import.meta.url));
const PROFILE_DIR = '/var/lib/opencode-pty-profile';
const note = (message: string) => process.stderr.write(`${new Date().toISOString()} ${message}\n`);

const built = spawnSync(process.execPath, [fileURLToPath(new URL('../../build.mjs', import.meta.url))], { stdio: 'inherit' });
if (built.status !== 0) throw new Error('node build.mjs failed');
await buildAgent();
const sandbox = await bootSandbox({ name: args.find((arg) => arg.startsWith('--name='))?.slice(7) || 'torture-inside-flood' });
const results = new Map<string, FloodFigures[]>();
try {
  await deploySupervisor(sandbox, { limits: { idleExitMs: 600_000 } });
  if (profile) {
    // The broker writes a CPU profile at exit (bench/cpu-profile.cjs), collected at the end.
    await sandbox.install([
      { from: join(root, 'bench/cpu-profile.cjs'), to: `${INSTALL_DIR}/cpu-profile.cjs`, mode: 0o644 },
      {
        to: '/etc/systemd/system/opencode-pty-supervisor@.service.d/profile.conf',
        content: `[Service]\nEnvironment="NODE_OPTIONS=--require ${INSTALL_DIR}/cpu-profile.cjs" OPENCODE_PTY_PROFILE_DIR=${PROFILE_DIR}\nReadWritePaths=${PROFILE_DIR}\n`,
      },
    ]);
    await sandbox.exec(['mkdir', '-p', PROFILE_DIR]);
    await sandbox.systemctl('daemon-reload');
    await stopBroker(sandbox);
  }
  const ctx: TortureContext = { sandbox, driver: await Agent.start(sandbox), scale: 'full', note };
  const [warm] = await ctx.driver.sessions(1, ['true']);
  if (!warm?.ok) throw new Error(`warm-up failed: ${JSON.stringify(warm)}`);
  for (let round = 0; round < rounds; round += 1) {
    for (const mode of [undefined, ...modes]) {
      const label = mode ? `inside flood (${mode})` : 'no flood';
      const load = (await sandbox.exec(['cat', '/proc/loadavg'])).stdout.trim();
      let sampling = Boolean(mode) && args.includes('--fds');
      const samples: string[] = [];
      const sampler = (async () => {
        while (sampling) {
          const pid = await brokerPid(sandbox);
          const listing = (await sandbox.exec(['sh', '-c', `ls -l /proc/${pid}/fd | awk '{print $NF}' | sed 's/[0-9]*//g' | sort | uniq -c | sort -rn | head -4 | tr '\\n' ' '`])).stdout;
          samples.push(listing.trim());
          await new Promise((resolve) => setTimeout(resolve, 300));
        }
      })();
      const { figures, flood } = await insideFloodRound(ctx, seconds * 1000, mode, paceMs);
      sampling = false;
      await sampler;
      if (samples.length) note(`broker fds: ${samples.join(' | ')}`);
      note(`${label}, round ${round + 1} (load ${load}): ${JSON.stringify({ ...figures, samplesMs: undefined })}${flood ? `; flood ${JSON.stringify(flood)}` : ''}`);
      results.set(label, [...(results.get(label) ?? []), figures]);
    }
  }
  if (args.includes('--journal')) note((await sandbox.exec(['journalctl', '-o', 'short-precise', '-n', '80', '--no-pager', '-u', 'opencode-pty-supervisor@broker.service'])).stdout);
  if (profile) {
    await stopBroker(sandbox);
    const out = join(root, '.bench', 'profiles', `inside-flood-${new Date().toISOString().replace(/[:.]/g, '-')}`);
    mkdirSync(out, { recursive: true });
    const from = `${sandbox.root}${PROFILE_DIR}`;
    for (const name of readdirSync(from)) copyFileSync(join(from, name), join(out, name));
    note(`CPU profiles in ${out}`);
  }
} finally {
  await sandbox.stop();
}
console.log('\n| case | MainPID starts | failures | p50 ms | p99 ms | broker CPU |\n|---|---|---|---|---|---|');
for (const [label, runs] of results) {
  const all = pooled(runs);
  console.log(`| ${label} | ${all.starts} | ${all.failures} | ${all.p50Ms.toFixed(0)} | ${all.p99Ms.toFixed(0)} | ${(all.brokerCpu * 100).toFixed(0)}% of a core |`);
}
