// npm run bench [-- --quick] [--json PATH] [--only SECTION,…] (sections: warm, warm-off, cold, held,
// profiles, throughput, echo, interrupt, attach, flood): boots the sandbox once, deploys the
// supervisor, and measures opencode-pty against its anchors (systemd-run --pty, script -qc) in the
// same run, samples alternated and the order rotated each round. Prints Markdown tables (min /
// median / max, ratios against the anchor named per section) and writes the figures as JSON.
import { execFileSync } from 'node:child_process';
import { cpus, loadavg, totalmem } from 'node:os';
import { copyFileSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { bootSandbox, sandboxUnavailable, type Sandbox } from '../test/sandbox/index.ts';
import { AGENT_SERVICE, BROKER_UNIT, CONFIG_PATH, INSTALL_DIR, SOCKET_PATH, deploy, deployConfig } from '../test/sandbox/deploy.ts';
import { brokerPid, sessionsGone, stopBroker } from '../test/support/supervisor.ts';
import { IDLE_SPARE_MS } from '../src/broker/index.ts';
import { SOCKET_GROUP } from '../test/sandbox/seed.ts';
import { attachBench } from './attach.ts';
import { buildProbe } from './build-probe.ts';
import { profilesBench } from './profiles.ts';
import { Probe } from './rpc.ts';
import { formatSections, rotation, summarize, withRatios, type Figure, type Section } from './stats.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const { values: args } = parseArgs({
  options: { quick: { type: 'boolean', default: false }, json: { type: 'string' }, only: { type: 'string' }, profile: { type: 'boolean', default: false }, rounds: { type: 'string' } },
});
/** --rounds N: samples of each contender in the warm and cold sections (else 20 and 10, 8 and 10 with --quick; never fewer than 10 cold). */
const rounds = args.rounds === undefined ? undefined : Number(args.rounds);
if (rounds !== undefined && !(Number.isInteger(rounds) && rounds > 0)) throw new Error(`--rounds ${args.rounds}: a positive whole number`);
const quick = args.quick!;
const only = args.only ? new Set(args.only.split(',')) : undefined;
const MiB = 1024 * 1024;

const LIB = 'opencode-pty library';
const CLI = 'opencode-pty CLI';
const SDRUN = 'systemd-run --pty';
const SCRIPT = 'script -qc';
/** The machine's own cost of starting Node, which a cold start pays twice (the broker, its first spare). */
const NODE = 'node -e 0';

function say(message: string): void {
  process.stderr.write(`bench: ${message}\n`);
}

function ms(values: (number | undefined)[]): number[] {
  return values.filter((value): value is number => typeof value === 'number' && Number.isFinite(value));
}

function figure(row: string, contender: string, values: number[], unit = 'ms', note?: string, p99 = false): Figure {
  const samples = values.map((value) => Math.round(value * 1000) / 1000);
  return { row, contender, unit, summary: summarize(values, p99), ...(note ? { note } : {}), samples };
}

interface Context {
  sandbox: Sandbox;
  agent: Probe;
  rootProbe: Probe;
  account: { user: string; uid: number; gid: number; cwd: string };
}

/** Writes a config and restarts nothing: the next broker reads it. */
async function writeConfig(sandbox: Sandbox, overrides: Record<string, unknown>): Promise<void> {
  await stopBroker(sandbox);
  await sandbox.install([{ content: `${JSON.stringify(deployConfig(sandbox, overrides), null, 2)}\n`, to: CONFIG_PATH, mode: 0o644 }]);
}

/** Limits for everything but the flood: no admission rate refusals and no idle exit between rows. Warm
 * units as shipped (on); the warm-off section turns them off for its rows alone. */
const BENCH_LIMITS = { limits: { maxAdmissionsPerMinute: 100_000, maxUnauthenticated: 64, idleExitMs: 600_000 }, session: { warmUnits: 1 } };
const LIB_COLD_UNIT = 'opencode-pty library, warm units off';

function sdRun(ctx: Context, argv: string[]): string[] {
  const a = ctx.account;
  return ['systemd-run', '--pty', '--wait', '--quiet', `--uid=${a.user}`, `--gid=${a.gid}`, `--working-directory=${a.cwd}`, '--', ...argv];
}

function scriptRun(argv: string): string[] {
  return ['script', '-qc', argv, '/dev/null'];
}

/** One sample of `echo hi` (or `command`) by contender. */
async function startSample(ctx: Context, who: string, shell = 'echo hi'): Promise<Record<string, any>> {
  const argv = ['sh', '-c', shell];
  const asClient = { uid: ctx.account.uid, gid: ctx.account.gid, cwd: ctx.account.cwd, env: { HOME: ctx.account.cwd } };
  switch (who) {
    case LIB:
      return ctx.agent.call({ op: 'library', argv });
    case CLI:
      return ctx.agent.call({ op: 'spawn', argv: ['/usr/bin/node', `${INSTALL_DIR}/cli.js`, 'run', '--socket', SOCKET_PATH, '--', ...argv] });
    case SDRUN:
      return ctx.rootProbe.call({ op: 'spawn', argv: sdRun(ctx, argv) });
    case SCRIPT:
      return ctx.rootProbe.call({ op: 'spawn', argv: scriptRun(shell), ...asClient });
    case NODE:
      return ctx.rootProbe.call({ op: 'spawn', argv: ['/usr/bin/node', '-e', '0'], ...asClient });
    default:
      throw new Error(who);
  }
}

/**
 * Pause before each timed start, for every contender alike: "warm" means the supervisor is idle and
 * ready (its spare worker booted), not still busy with the previous sample. The back-to-back row
 * shows starts without it.
 */
const SETTLE_MS = 300;
const settle = () => new Promise((resolve) => setTimeout(resolve, SETTLE_MS));

async function warm(ctx: Context, rounds: number): Promise<Section> {
  const who = [LIB, CLI, SDRUN, SCRIPT];
  const samples = new Map<string, Record<string, any>[]>(who.map((name) => [name, []]));
  // One unmeasured round: the broker, its spare and the page cache are warm afterwards.
  for (const name of who) await startSample(ctx, name);
  for (let round = 0; round < rounds; round += 1) {
    for (const name of rotation(who, round)) {
      await settle();
      samples.get(name)!.push(await startSample(ctx, name));
    }
  }
  // Back to back: each contender's starts in a row, no pause (the supervisor's spare may still boot).
  const burst = new Map<string, number[]>();
  for (const name of [LIB, SDRUN]) {
    await settle();
    const exits: number[] = [];
    for (let i = 0; i < rounds; i += 1) exits.push((await startSample(ctx, name)).exit);
    burst.set(name, exits);
  }
  const figures: Figure[] = [];
  const lib = samples.get(LIB)!;
  figures.push(figure('connect→WELCOME', LIB, ms(lib.map((s) => s.welcome))));
  figures.push(figure('connect→STARTED', LIB, ms(lib.map((s) => s.started))));
  for (const name of who) figures.push(figure('→first OUTPUT', name, ms(samples.get(name)!.map((s) => s.first))));
  for (const name of who) figures.push(figure('→EXIT', name, ms(samples.get(name)!.map((s) => s.exit)), 'ms', name === CLI ? 'spawn→exit; goal ≤ 1.5× systemd-run (issue 31)' : undefined));
  for (const [name, exits] of burst) figures.push(figure('→EXIT, back to back', name, exits));
  return withRatios({ title: `Warm start of \`echo hi\` (connect or spawn →; ${SETTLE_MS} ms idle before each sample; warm units on)`, anchor: SDRUN, figures });
}

/**
 * The library's starts with session.warmUnits 0 (every START creates its unit) and 1: the broker runs
 * one config at a time, so the two are measured in blocks (a config change restarts the broker), each
 * block alternated round by round with the anchors.
 */
async function warmOff(ctx: Context, rounds: number): Promise<Section> {
  const blocks: [string, number][] = [
    [LIB_COLD_UNIT, 0],
    [LIB, 1],
  ];
  const who = [LIB, SDRUN, SCRIPT];
  const samples = new Map<string, Record<string, any>[]>([...blocks.map(([name]) => [name, []] as [string, Record<string, any>[]]), [SDRUN, []], [SCRIPT, []]]);
  for (const [name, warmUnits] of blocks) {
    await writeConfig(ctx.sandbox, { ...BENCH_LIMITS, session: { warmUnits } });
    // Unmeasured: the broker and its spare boot, and with warm units on the spare's unit is up after.
    await startSample(ctx, LIB);
    await startSample(ctx, LIB);
    for (let round = 0; round < rounds; round += 1) {
      for (const each of rotation(who, round)) {
        await settle();
        const sample = await startSample(ctx, each);
        samples.get(each === LIB ? name : each)!.push(sample);
      }
    }
  }
  const figures: Figure[] = [];
  for (const [name] of blocks) figures.push(figure('connect→STARTED', name, ms(samples.get(name)!.map((s) => s.started))));
  for (const name of [...blocks.map(([n]) => n), SDRUN, SCRIPT]) figures.push(figure('→first OUTPUT', name, ms(samples.get(name)!.map((s) => s.first))));
  for (const name of [...blocks.map(([n]) => n), SDRUN, SCRIPT]) figures.push(figure('→EXIT', name, ms(samples.get(name)!.map((s) => s.exit))));
  return withRatios({ title: `Warm units off against on: \`echo hi\` (connect or spawn →; ${SETTLE_MS} ms idle before each; off then on, each block alternated with the anchors)`, anchor: SCRIPT, figures });
}

/**
 * What an agent meets after the broker's idle exit: the broker gone a while (never its stop still
 * settling), the socket left to systemd. Every cold sample stops the broker, waits this long, and
 * checks that the start was cold (a new broker PID). 1 s, not the 60 s of a real idle exit: longer
 * pauses measured the same (0 / 0.1 / 0.4 / 1 / 3 s, alternated), and the bench's time is better
 * spent on samples.
 */
const COLD_PAUSE_MS = 1000;

/**
 * Cold starts of the library and of the CLI (a user's `opencode-ptyctl run` after an idle exit),
 * alternated round by round with warm starts of the same two, the anchor and a bare Node start, each
 * after the same pause: a cold start is two Node starts at once (the broker and its first spare),
 * so the machine and what else it runs move it by half (128 to 869 ms between runs of
 * bench/results/), and only figures of one run, alternated, compare.
 */
async function cold(ctx: Context, rounds: number): Promise<Section> {
  const COLD_LIB = `${LIB}, cold`;
  const COLD_CLI = `${CLI}, cold`;
  const who = [COLD_LIB, COLD_CLI, LIB, CLI, SDRUN, NODE];
  const samples = new Map<string, Record<string, any>[]>(who.map((name) => [name, []]));
  let notCold = 0;
  const phases: Map<string, number>[] = [];
  const load = loadavg()[0]!;
  for (let round = 0; round < rounds; round += 1) {
    for (const name of rotation(who, round)) {
      const isCold = name === COLD_LIB || name === COLD_CLI;
      const before = await brokerPid(ctx.sandbox);
      if (isCold) await stopBroker(ctx.sandbox);
      // A warm sample needs a running broker with its spare booted (its first start is untimed).
      else if (before === 0) await startSample(ctx, LIB);
      await new Promise((resolve) => setTimeout(resolve, isCold ? COLD_PAUSE_MS : SETTLE_MS));
      const sample = await startSample(ctx, isCold ? (name === COLD_LIB ? LIB : CLI) : name);
      if (isCold && (await brokerPid(ctx.sandbox)) === before) notCold += 1;
      if (isCold) phases.push(startupPhases(await ctx.sandbox.journal(BROKER_UNIT)));
      samples.get(name)!.push(sample);
    }
  }
  const lib = samples.get(COLD_LIB)!;
  // The broker's own start, phase by phase, from its journal line of each cold sample.
  const phaseNames = [...new Set(phases.flatMap((p) => [...p.keys()]))];
  const phaseFigures = phaseNames.map((phase) => figure(`broker start: ${phase}`, 'cold', ms(phases.map((p) => p.get(phase)))));
  const figures = [
    figure('connect→WELCOME', COLD_LIB, ms(lib.map((s) => s.welcome))),
    figure('connect→STARTED', COLD_LIB, ms(lib.map((s) => s.started))),
    figure('→first OUTPUT', COLD_LIB, ms(lib.map((s) => s.first))),
    ...who.map((name) => figure('→EXIT', name, ms(samples.get(name)!.map((s) => s.exit)), 'ms', name === COLD_LIB ? 'goal ≤ 150 ms' : undefined)),
    ...phaseFigures,
  ];
  const bareNode = figures.find((f) => f.contender === NODE)!.summary.median;
  for (const f of figures.filter((f) => f.row === '→EXIT' && (f.contender === COLD_LIB || f.contender === COLD_CLI))) {
    f.note = `${f.note ? `${f.note}; ` : ''}${(f.summary.median / bareNode).toFixed(2)}× a bare Node start`;
  }
  if (notCold) figures.at(-1)!.note = `${notCold} cold samples met a running broker`;
  return withRatios({
    title: `Cold start (socket activation, ${COLD_PAUSE_MS} ms after the broker stopped) of \`echo hi\`, alternated with warm starts (${SETTLE_MS} ms idle before each); load ${load.toFixed(2)} → ${loadavg()[0]!.toFixed(2)}`,
    anchor: SDRUN,
    figures,
  });
}

/** The phases of the last "ready N ms after its start: phase N, …" line of a journal (src/broker/startup-phases.ts), total included. */
function startupPhases(journal: string): Map<string, number> {
  const line = journal.split('\n').filter((l) => l.includes('ms after its start: ')).at(-1);
  const found = new Map<string, number>();
  const match = line?.match(/ready (\d+) ms after its start: (.*)$/);
  if (!match) return found;
  for (const part of match[2]!.split(', ')) {
    const at = part.lastIndexOf(' ');
    found.set(part.slice(0, at), Number(part.slice(at + 1)));
  }
  found.set('ready', Number(match[1]));
  return found;
}

interface Held {
  section: Section;
  memory: Section;
}

/**
 * A session's slot is freed a moment after its EXIT (once its unit is gone); a start right after one
 * at the limit waits for that slot (docs/protocol.md). One refused all the same (the slot slower to
 * come free than half the handshake deadline) is retried, untimed, after a pause, and counted.
 */
async function startRetrying(ctx: Context, command: Record<string, unknown>, retries: { count: number }): Promise<Record<string, any>> {
  for (;;) {
    try {
      return await ctx.agent.call(command);
    } catch (error) {
      if ((error as { code?: string }).code !== 'SESSION_LIMIT' || retries.count > 100) throw error;
      retries.count += 1;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

async function heldAndMemory(ctx: Context, samplesPerLevel: number): Promise<Held> {
  const levels = quick ? [0, 1, 7, 15] : [0, 1, 2, 4, 8, 12, 15];
  const figures: Figure[] = [];
  const memFigures: Figure[] = [];
  const helpers: number[] = [];
  const anchors: number[] = [];
  const broker = await brokerPid(ctx.sandbox);
  const retries = { count: 0 };
  const memoryAt = async (sessions: number) => {
    // Let the spare finish starting (it is not on any timed path here).
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const m = (await ctx.rootProbe.call({ op: 'memory', brokerPid: broker, sessions, helpers, anchors })) as Record<string, any>;
    const add = (what: string, entries: ({ pss: number; rss: number; uss: number } | undefined)[], who = 'opencode-pty') => {
      const present = entries.filter((entry) => entry !== undefined);
      if (!present.length) return;
      for (const kind of ['uss', 'pss', 'rss'] as const) {
        memFigures.push(figure(`${what} ${kind.toUpperCase()} at ${sessions}`, who, present.map((entry) => entry![kind] / 1024), 'MB'));
      }
    };
    add('broker', [m.broker]);
    add('spare', [m.spare]);
    // What the supervisor costs while it waits (issue 31's goal: at most 32 MB), a held session's worker beside it.
    if (sessions === 0 && m.broker && m.spare) memFigures.push(figure('idle broker + spare USS', 'opencode-pty', [(m.broker.uss + m.spare.uss) / 1024], 'MB', 'goal ≤ 32 MB'));
    add('worker', m.workers);
    add('helper', m.helpers);
    add('client process', m.anchors, SDRUN);
  };
  // Idle means after the pool's idle trim: a worker given back beside a fresh spare stays that long.
  await new Promise((resolve) => setTimeout(resolve, IDLE_SPARE_MS + 500));
  await memoryAt(0);
  let holding = 0;
  for (const level of levels) {
    while (holding < level) {
      const held = await startRetrying(ctx, { op: 'library', argv: ['sleep', '3600'], hold: true }, retries);
      helpers.push(held.helperPid);
      holding += 1;
      if (holding === 1) await memoryAt(1);
    }
    const values: number[] = [];
    const exits: number[] = [];
    for (let i = 0; i < samplesPerLevel; i += 1) {
      await settle();
      const sample = await startRetrying(ctx, { op: 'library', argv: ['sh', '-c', 'echo hi'] }, retries);
      values.push(sample.started);
      exits.push(sample.exit);
    }
    figures.push(figure(`start #${level + 1} (${level} held): connect→STARTED`, LIB, values));
    figures.push(figure(`start #${level + 1} (${level} held): connect→EXIT`, LIB, exits));
  }
  while (holding < 16) {
    const held = await startRetrying(ctx, { op: 'library', argv: ['sleep', '3600'], hold: true }, retries);
    helpers.push(held.helperPid);
    holding += 1;
  }
  for (let i = 0; i < 16; i += 1) {
    anchors.push(((await ctx.rootProbe.call({ op: 'holdAnchor', account: ctx.account })) as Record<string, any>).pid);
  }
  await memoryAt(16);
  await ctx.agent.call({ op: 'release' });
  await ctx.rootProbe.call({ op: 'release' });
  // Ratios against the first start: the goal is a flat curve.
  const first = figures.find((f) => f.row.startsWith('start #1 ') && f.row.endsWith('EXIT'))!;
  const firstStarted = figures.find((f) => f.row.startsWith('start #1 ') && f.row.endsWith('STARTED'))!;
  for (const f of figures) {
    const base = f.row.endsWith('EXIT') ? first : firstStarted;
    f.ratio = f.summary.median / base.summary.median;
  }
  const memory: Section = { title: 'Memory per process (MB; USS = private clean + dirty), at 0 / 1 / 16 sessions', figures: memFigures };
  if (retries.count) figures.at(-1)!.note = `${retries.count} starts refused with SESSION_LIMIT right after an EXIT (slot not yet freed), retried`;
  return { section: { title: 'Start vs sessions held (ratios against the first start, goal: 16th ≤ 1.2×)', figures }, memory };
}

interface Load {
  name: string;
  shell: string;
  bytes: number;
  expect: number;
}

async function throughput(ctx: Context, rounds: number): Promise<Section[]> {
  const yesMiB = quick ? 8 : 64;
  const loads: Load[] = [
    { name: `${yesMiB} MiB yes`, shell: `yes 2>/dev/null | head -c ${yesMiB * MiB}`, bytes: yesMiB * MiB, expect: yesMiB * MiB * 1.5 },
    { name: '64 MiB yes, stty -opost', shell: `stty -opost; yes 2>/dev/null | head -c ${64 * MiB}`, bytes: 64 * MiB, expect: 64 * MiB },
    { name: '48 MiB base64 -w0 of random data', shell: `head -c ${36 * MiB} /dev/urandom | base64 -w0`, bytes: 48 * MiB, expect: 48 * MiB },
  ];
  const who = [LIB, SDRUN, SCRIPT];
  const figures: Figure[] = [];
  const cpu: Figure[] = [];
  for (const load of loads) {
    const samples = new Map<string, Record<string, any>[]>(who.map((name) => [name, []]));
    for (let round = 0; round < rounds; round += 1) {
      for (const name of rotation(who, round)) {
        const argv = ['sh', '-c', load.shell];
        const sample =
          name === LIB
            ? await ctx.agent.call({ op: 'library', argv, expect: load.expect, cpu: true })
            : name === SDRUN
              ? await ctx.rootProbe.call({ op: 'spawn', argv: sdRun(ctx, argv), expect: load.expect })
              : await ctx.rootProbe.call({ op: 'spawn', argv: scriptRun(load.shell), expect: load.expect, uid: ctx.account.uid, gid: ctx.account.gid, cwd: ctx.account.cwd });
        if (sample.bytes !== load.expect) say(`${load.name} through ${name}: ${sample.bytes} bytes received, ${load.expect} expected; begins ${JSON.stringify(sample.head)}, ends ${JSON.stringify(sample.tail)}`);
        samples.get(name)!.push(sample);
      }
    }
    for (const name of who) {
      const list = samples.get(name)!;
      const ok = list.filter((s) => s.bytes === load.expect).length;
      figures.push(figure(load.name, name, ms(list.map((s) => s.exit)), 'ms', `bytes checked: ${ok}/${list.length} exact`));
      const mib = load.bytes / MiB;
      for (const process of ['client', 'worker', 'helper']) {
        const values = ms(list.map((s) => (s.cpu?.[process] === undefined ? undefined : s.cpu[process] / mib)));
        if (values.length) cpu.push(figure(`${load.name}: ${process}`, name, values, 'ms CPU/MiB'));
      }
    }
  }
  return [
    withRatios({ title: 'Throughput (spawn or connect → EXIT, every byte counted)', anchor: SDRUN, figures }),
    { title: 'Relay CPU per MiB per process (client = the library process, systemd-run or script itself)', figures: cpu },
  ];
}

async function echo(ctx: Context, count: number): Promise<Section> {
  const who = [LIB, SDRUN, SCRIPT];
  const figures: Figure[] = [];
  for (const name of rotation(who, Math.floor(Date.now() / 1000))) {
    const kind = name === LIB ? 'library' : name === SDRUN ? 'systemd-run' : 'script';
    const latencies = (await (name === LIB ? ctx.agent : ctx.rootProbe).call({ op: 'echo', kind, count, account: ctx.account })) as number[];
    // The first few warm the path up; they are left out.
    figures.push(figure(`echo of one INPUT byte (n=${count})`, name, latencies.slice(10), 'ms', undefined, true));
  }
  return withRatios({ title: 'Keystroke echo into `cat`', anchor: SDRUN, figures });
}

/**
 * A screen slower than `yes` through a terminal (≈5 MiB/s with ONLCR), so output queues in front of
 * it as in front of a terminal emulator (the figure of issue 10 was taken through tmux).
 */
const SCREEN_RATE = 1 * MiB;

async function interrupt(ctx: Context, rounds: number): Promise<Section> {
  const who = [LIB, SDRUN, SCRIPT];
  const figures: Figure[] = [];
  for (const [rate, label] of [[0, 'reader as fast as it can'], [SCREEN_RATE, 'screen drawing 1 MiB/s']] as const) {
    const samples = new Map<string, number[]>(who.map((name) => [name, []]));
    for (let round = 0; round < rounds; round += 1) {
      for (const name of rotation(who, round)) {
        const kind = name === LIB ? 'library' : name === SDRUN ? 'systemd-run' : 'script';
        const result = (await (name === LIB ? ctx.agent : ctx.rootProbe).call({ op: 'interrupt', kind, floodBytes: rate ? MiB : 4 * MiB, account: ctx.account, screenRate: rate })) as Record<string, number>;
        samples.get(name)!.push(result.ms);
      }
    }
    for (const name of who) figures.push(figure(`^C → prompt, ${label}`, name, samples.get(name)!));
  }
  return withRatios({ title: '^C while `yes` floods the screen, until the prompt returns (after 4 MiB, or 1 MiB on the slow screen)', anchor: SDRUN, figures });
}

async function flood(ctx: Context, seconds: number, warmLib: Figure | undefined): Promise<Section> {
  // The flood meets the default admission limits: those are what an agent lives with.
  await writeConfig(ctx.sandbox, { limits: { idleExitMs: 600_000 } });
  await ctx.agent.call({ op: 'library', argv: ['true'] });
  await ctx.agent.call({ op: 'broker', pid: await brokerPid(ctx.sandbox) });
  // Another process of the account that has the socket's group (as a second service given it by
  // mistake would): without the group the kernel refuses every connect and the broker sees nothing.
  const flooder = ctx.sandbox.exec(['/usr/bin/node', `${INSTALL_DIR}/bench-probe.js`, 'flood', SOCKET_PATH, String(seconds * 1000), '16'], {
    as: 'client',
    groups: [SOCKET_GROUP.gid],
    timeoutMs: seconds * 1000 + 30_000,
  });
  const loop = (await ctx.agent.call({ op: 'startLoop', ms: seconds * 1000 })) as { exits: number[]; errors: string[]; brokerCpu?: number };
  const flooded = await flooder;
  const floodReport = flooded.stdout.trim() || flooded.stderr.trim();
  const errors = loop.errors.length ? `; ${loop.errors.length} refused (${[...new Set(loop.errors)].join(', ')})` : '';
  const brokerCpu = loop.brokerCpu === undefined ? '' : `; broker CPU ${(loop.brokerCpu * 100).toFixed(0)}% of one core`;
  const figures = [figure(`agent start (connect→EXIT of true) under a ${seconds} s flood`, LIB, loop.exits, 'ms', `flood: ${floodReport}${errors}${brokerCpu}`, true)];
  if (warmLib) figures.push({ ...warmLib, row: figures[0]!.row, contender: `${LIB}, no flood`, note: 'the warm section' });
  await writeConfig(ctx.sandbox, BENCH_LIMITS);
  return withRatios({ title: 'Agent start under a connection flood from another process of the account (default limits)', anchor: `${LIB}, no flood`, figures });
}

const PROFILE_DIR = '/var/lib/opencode-pty-profile';

/** --profile: every broker and worker process writes a CPU profile at exit (bench/cpu-profile.cjs). */
async function enableProfiling(sandbox: Sandbox): Promise<void> {
  await sandbox.install([
    { from: join(root, 'bench/cpu-profile.cjs'), to: `${INSTALL_DIR}/cpu-profile.cjs`, mode: 0o644 },
    {
      to: '/etc/systemd/system/opencode-pty-supervisor@.service.d/profile.conf',
      content: `[Service]\nEnvironment="NODE_OPTIONS=--require ${INSTALL_DIR}/cpu-profile.cjs" OPENCODE_PTY_PROFILE_DIR=${PROFILE_DIR}\nReadWritePaths=${PROFILE_DIR}\n`,
    },
  ]);
  await sandbox.exec(['mkdir', '-p', PROFILE_DIR]);
  const reload = await sandbox.systemctl('daemon-reload');
  if (reload.code !== 0) throw new Error(`daemon-reload: ${reload.stderr}`);
}

async function collectProfiles(sandbox: Sandbox): Promise<void> {
  await stopBroker(sandbox);
  const out = join(root, '.bench', 'profiles', new Date().toISOString().replace(/[:.]/g, '-'));
  mkdirSync(out, { recursive: true });
  const from = `${sandbox.root}${PROFILE_DIR}`;
  const files = readdirSync(from);
  for (const name of files) copyFileSync(join(from, name), join(out, name));
  say(`${files.length} CPU profiles in ${out} (summaries: node --import tsx bench/profile-summary.ts ${out}/*)`);
}

function commit(): string {
  try {
    const rev = execFileSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['-C', root, 'status', '--porcelain', '--', 'src', 'native', 'build.mjs'], { encoding: 'utf8' }).trim();
    return dirty ? `${rev}+dirty` : rev;
  } catch {
    return 'unknown';
  }
}

async function main(): Promise<void> {
  const unavailable = sandboxUnavailable();
  if (unavailable) throw new Error(`the bench ${unavailable.replace('integration tests need', 'needs')}`);
  const began = performance.now();
  const revision = commit();
  execFileSync(process.execPath, [join(root, 'build.mjs')], { stdio: ['ignore', 2, 2] });
  const probeBundle = await buildProbe();
  const loadBefore = loadavg();
  const sandbox = await bootSandbox({ name: 'opencode-pty-bench' });
  const sections: Section[] = [];
  try {
    await deploy(sandbox, deployConfig(sandbox, BENCH_LIMITS));
    await sandbox.install([{ from: probeBundle, to: `${INSTALL_DIR}/bench-probe.js`, mode: 0o644 }]);
    if (args.profile) await enableProfiling(sandbox);
    const inside = `${sandbox.client.home}/bench-probe.sock`;
    await sandbox.startClientService(AGENT_SERVICE, ['/usr/bin/node', `${INSTALL_DIR}/bench-probe.js`, 'serve', inside, SOCKET_PATH]);
    const rootProcess = sandbox.spawn(['/usr/bin/node', `${INSTALL_DIR}/bench-probe.js`, 'serve', '/run/bench-probe.sock', SOCKET_PATH]);
    rootProcess.stderr!.on('data', (chunk: Buffer) => process.stderr.write(chunk));
    const ctx: Context = {
      sandbox,
      agent: await Probe.open(`${sandbox.root}${inside}`),
      rootProbe: await Probe.open(`${sandbox.root}/run/bench-probe.sock`),
      account: { user: sandbox.client.user, uid: sandbox.client.uid, gid: sandbox.client.gid, cwd: sandbox.client.home },
    };
    try {
      const want = (name: string) => !only || only.has(name);
      // A section that fails is reported as such; the others still run.
      const attempt = async (title: string, run: () => Promise<Section | Section[]>): Promise<void> => {
        try {
          const result = await run();
          sections.push(...(Array.isArray(result) ? result : [result]));
        } catch (error) {
          say(`${title} failed: ${(error as Error).stack ?? String(error)}`);
          sections.push({ title: `${title}: FAILED (${(error as Error).message})`, figures: [] });
        }
      };
      let warmSection: Section | undefined;
      if (want('warm')) {
        say('warm starts');
        warmSection = await warm(ctx, rounds ?? (quick ? 8 : 20));
        sections.push(warmSection);
      }
          const warmLib = warmSection?.figures.find((f) => f.row === '→EXIT' && f.contender === LIB);
      if (want('warm-off')) {
        say('warm units off against on');
        await attempt('warm units off against on', () => warmOff(ctx, rounds ?? (quick ? 8 : 20)));
      }
      if (want('cold')) {
        say('cold starts');
        await attempt('cold start', () => cold(ctx, Math.max(10, rounds ?? 10)));
      }
      if (want('profiles')) {
        say('starts by profile and network mode');
        await attempt('starts by profile', () => profilesBench({ ...ctx, say }, Math.max(quick ? 5 : 10, rounds ?? (quick ? 5 : 15))));
      }
      // Everything below needs the broker's PID; start one now.
      await ctx.agent.call({ op: 'library', argv: ['true'] });
      await ctx.agent.call({ op: 'broker', pid: await brokerPid(sandbox) });
      if (want('held')) {
        say('starts vs sessions held, memory');
        await attempt('starts vs sessions held', async () => {
          const held = await heldAndMemory(ctx, quick ? 3 : 7);
          return [held.section, held.memory];
        });
        await ctx.agent.call({ op: 'release' }).catch(() => undefined);
        await ctx.rootProbe.call({ op: 'release' }).catch(() => undefined);
        // Their slots free only once their workers end; a section that starts early says so.
        await sessionsGone(sandbox).catch((error: Error) => say(error.message));
      }
      if (want('throughput')) {
        say('throughput');
        await attempt('throughput', () => throughput(ctx, quick ? 1 : 3));
      }
      if (want('echo')) {
        say('keystroke echo');
        await attempt('keystroke echo', () => echo(ctx, quick ? 500 : 2000));
      }
      if (want('interrupt')) {
        say('^C during a flood of output');
        await attempt('^C during output', () => interrupt(ctx, quick ? 2 : 5));
      }
      if (want('attach')) {
        say('attach: replay from 0 beside tmux attach and dtach -a');
        // Rings up to 64 MiB (session.maxRetainedBytes); the other sections keep the defaults.
        await writeConfig(sandbox, { ...BENCH_LIMITS, session: { maxRetainedBytes: 64 * MiB } });
        await attempt('attach', () =>
          attachBench({ ...ctx, brokerPid: () => brokerPid(sandbox), say }, rounds ?? (quick ? 3 : 10), [2 * MiB, 64 * MiB]),
        );
        await writeConfig(sandbox, BENCH_LIMITS);
      }
      if (want('flood')) {
        say('connection flood');
        await attempt('connection flood', () => flood(ctx, 10, warmLib));
      }
    } finally {
      rootProcess.kill('SIGTERM');
    }
    if (args.profile) await collectProfiles(sandbox);
  } finally {
    await sandbox.stop();
  }
  const loadAfter = loadavg();
  const meta = {
    date: new Date().toISOString(),
    commit: revision,
    machine: `${cpus().length} cores (${cpus()[0]?.model ?? '?'}), ${(totalmem() / 2 ** 30).toFixed(1)} GiB`,
    node: process.version,
    quick,
    load: { before: loadBefore.map((v) => Number(v.toFixed(2))), after: loadAfter.map((v) => Number(v.toFixed(2))) },
    seconds: Number(((performance.now() - began) / 1000).toFixed(1)),
  };
  const header = `opencode-pty bench ${meta.date} · commit ${meta.commit} · ${meta.machine} · Node ${meta.node} · load ${meta.load.before.join(' ')} → ${meta.load.after.join(' ')}${quick ? ' · --quick' : ''} · ${meta.seconds} s\n`;
  process.stdout.write(`${header}\n${formatSections(sections)}`);
  const jsonPath = args.json ?? join(root, '.bench', `${meta.date.replace(/[:.]/g, '-')}-${meta.commit}.json`);
  mkdirSync(dirname(jsonPath), { recursive: true });
  writeFileSync(jsonPath, `${JSON.stringify({ meta, sections }, null, 2)}\n`);
  say(`figures written to ${jsonPath}`);
}

main().then(
  () => process.exit(0),
  (error: Error) => {
    say(error.stack ?? error.message);
    process.exit(1);
  },
);
