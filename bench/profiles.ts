// The profiles section of `npm run bench` (issue 32): start latency of `echo hi` through the library for
// each session profile (default, hardened, workspace) and with network off, beside `systemd-run --pty`
// in the same rounds, alternated and rotated. A START that names a profile above the floor or a network
// mode other than on takes a fresh unit (src/worker/warm-plan.ts); the default row may take a warm one.
import { loadavg } from 'node:os';
import type { Sandbox } from '../test/sandbox/index.ts';
import type { Probe } from './rpc.ts';
import { rotation, summarize, withRatios, type Figure, type Section } from './stats.ts';

export interface ProfilesContext {
  sandbox: Sandbox;
  agent: Probe;
  rootProbe: Probe;
  account: { user: string; uid: number; gid: number; cwd: string };
  say(message: string): void;
}

const SDRUN = 'systemd-run --pty';
/** The workspace profile refuses the home itself (src/worker/workspace-check.ts): a directory below it. */
const WORKSPACE_DIR = 'bench-ws';
const SETTLE_MS = 300;
const settle = () => new Promise((resolve) => setTimeout(resolve, SETTLE_MS));

function figure(row: string, contender: string, values: (number | undefined)[], note?: string): Figure {
  const kept = values.filter((value): value is number => typeof value === 'number' && Number.isFinite(value));
  return { row, contender, unit: 'ms', summary: summarize(kept), ...(note ? { note } : {}), samples: kept.map((value) => Math.round(value * 1000) / 1000) };
}

export async function profilesBench(ctx: ProfilesContext, rounds: number): Promise<Section> {
  const home = ctx.account.cwd;
  const workspace = `${home}/${WORKSPACE_DIR}`;
  const made = await ctx.sandbox.exec(['mkdir', '-p', workspace], { as: 'client' });
  if (made.code !== 0) throw new Error(`mkdir ${workspace}: ${made.stderr}`);
  // Each contender: the START's version 4 options (none for the default row: what an agent that asks nothing gets).
  const library: [string, Record<string, unknown> | undefined][] = [
    ['library, default', undefined],
    ['library, hardened', { profile: 'hardened' }],
    ['library, workspace', { profile: 'workspace', cwd: workspace }],
    ['library, network off', { network: 'off' }],
  ];
  const starts = new Map(library);
  const who = [...library.map(([name]) => name), SDRUN];
  const argv = ['sh', '-c', 'echo hi'];
  const a = ctx.account;
  const sample = (name: string): Promise<Record<string, any>> =>
    name === SDRUN
      ? ctx.rootProbe.call({ op: 'spawn', argv: ['systemd-run', '--pty', '--wait', '--quiet', `--uid=${a.user}`, `--gid=${a.gid}`, `--working-directory=${a.cwd}`, '--', ...argv] })
      : ctx.agent.call({ op: 'library', argv, start: starts.get(name) });
  const samples = new Map<string, Record<string, any>[]>(who.map((name) => [name, []]));
  const load = loadavg()[0]!;
  // One unmeasured round: every path (and the warm unit of the default row) is up afterwards.
  for (const name of who) {
    const first = await sample(name);
    if (first.bytes === 0) ctx.say(`profiles: ${name} printed nothing`);
  }
  for (let round = 0; round < rounds; round += 1) {
    for (const name of rotation(who, round)) {
      await settle();
      samples.get(name)!.push(await sample(name));
    }
  }
  const wrong = (name: string) => samples.get(name)!.filter((s) => s.code !== 0 && s.code !== undefined).length;
  const figures: Figure[] = [];
  for (const [name] of library) figures.push(figure('connect→STARTED', name, samples.get(name)!.map((s) => s.started)));
  for (const name of who) {
    const failed = wrong(name);
    const note = name === 'library, default' ? 'may take a warm unit' : name === SDRUN ? undefined : 'a fresh unit';
    figures.push(figure('→EXIT', name, samples.get(name)!.map((s) => s.exit), [note, failed ? `${failed} exited non-zero` : ''].filter(Boolean).join('; ') || undefined));
  }
  // Each profile against the default row too (the section's ratios are against the anchor).
  for (const f of figures) {
    const base = figures.find((other) => other.row === f.row && other.contender === 'library, default');
    if (base && f !== base && f.contender !== SDRUN) f.note = [`${(f.summary.median / base.summary.median).toFixed(2)}× default`, f.note].filter(Boolean).join('; ');
  }
  return withRatios({
    title: `Start of \`echo hi\` by profile and network mode (connect or spawn →; ${SETTLE_MS} ms idle before each sample; warm units on); load ${load.toFixed(2)} → ${loadavg()[0]!.toFixed(2)}`,
    anchor: SDRUN,
    figures,
  });
}
