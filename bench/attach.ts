// The attach section of `npm run bench` (issue 29): a kept session that wrote a ring's worth (2 MiB,
// 64 MiB) while detached, attached from 0: connect → first replay byte, and the replay's throughput to
// its last byte; beside `tmux attach` and `dtach -a` to a session that wrote the same, attached through a
// terminal (script -qc) in the same rounds, alternated. tmux redraws its screen and dtach only
// reconnects (neither replays the bytes), so theirs is a latency figure only. Then the USS of the kept
// session's worker and helper detached, and with a connection attached.
import type { Sandbox } from '../test/sandbox/index.ts';
import { INSTALL_DIR, SOCKET_PATH } from '../test/sandbox/deploy.ts';
import type { Probe } from './rpc.ts';
import { rotation, summarize, withRatios, type Figure, type Section } from './stats.ts';

const MiB = 1024 * 1024;
const LIB = 'opencode-pty library (ATTACH from 0)';
const CLI = 'opencode-ptyctl attach (CLI, root)';
const TMUX = 'tmux attach';
const DTACH = 'dtach -a';

export interface AttachContext {
  sandbox: Sandbox;
  agent: Probe;
  rootProbe: Probe;
  account: { user: string; uid: number; gid: number; cwd: string };
  brokerPid(): Promise<number>;
  say(message: string): void;
}

function figure(row: string, contender: string, values: number[], unit = 'ms', note?: string): Figure {
  const kept = values.filter((value) => Number.isFinite(value));
  return { row, contender, unit, summary: summarize(kept), ...(note ? { note } : {}), samples: kept.map((value) => Math.round(value * 1000) / 1000) };
}

/** The program every contender runs: waits for its go file, writes `bytes` (no ONLCR), then echoes input. */
function writer(go: string, bytes: number): string {
  return `stty -opost; while [ ! -e ${go} ]; do sleep 0.05; done; yes | head -c ${bytes}; exec cat`;
}

const quote = (text: string) => `'${text.replaceAll("'", `'\\''`)}'`;

/** Waits (bounded) until `done` says so, polling every 100 ms. */
async function waitUntil(what: string, done: () => Promise<boolean>, ms = 120_000, seen: () => unknown = () => ''): Promise<void> {
  const until = Date.now() + ms;
  while (!(await done())) {
    if (Date.now() > until) throw new Error(`no ${what} within ${ms} ms; last seen ${JSON.stringify(seen())}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

interface Anchors {
  tmuxSocket: string;
  dtachSocket: string;
  /** The anchors installed on the host (the sandbox's /usr is the host's): dtach is not everywhere. */
  present: string[];
}

/** tmux and dtach sessions as the client, each writing `bytes` once started (detached from the start). */
async function startAnchors(ctx: AttachContext, tag: string, bytes: number): Promise<Anchors> {
  const home = ctx.account.cwd;
  const go = `${home}/bench-go-anchor-${tag}`;
  const installed = async (name: string) => (await ctx.sandbox.exec(['sh', '-c', `command -v ${name}`])).code === 0;
  const present = [...((await installed('tmux')) ? [TMUX] : []), ...((await installed('dtach')) ? [DTACH] : [])];
  for (const name of [TMUX, DTACH]) if (!present.includes(name)) ctx.say(`attach: ${name} is not installed: left out (apt-get install ${name.split(' ')[0]})`);
  const anchors = { tmuxSocket: `${home}/bench-tmux-${tag}.sock`, dtachSocket: `${home}/bench-dtach-${tag}.sock`, present };
  const as = { as: 'client' as const, cwd: home };
  if (present.includes(TMUX)) {
    const tmux = await ctx.sandbox.exec(['tmux', '-S', anchors.tmuxSocket, 'new-session', '-d', '-s', 'bench', '-x', '80', '-y', '24', writer(go, bytes)], { ...as, env: { HOME: home } });
    if (tmux.code !== 0) throw new Error(`tmux new-session: ${tmux.stderr}`);
  }
  if (present.includes(DTACH)) {
    const dtach = await ctx.sandbox.exec(['dtach', '-n', anchors.dtachSocket, '-z', 'sh', '-c', writer(go, bytes)], as);
    if (dtach.code !== 0) throw new Error(`dtach -n: ${dtach.stderr}`);
  }
  await ctx.sandbox.exec(['touch', go], as);
  return anchors;
}

async function stopAnchors(ctx: AttachContext, anchors: Anchors): Promise<void> {
  if (anchors.present.includes(TMUX)) await ctx.sandbox.exec(['tmux', '-S', anchors.tmuxSocket, 'kill-server'], { as: 'client' });
  for (const pid of (await ctx.rootProbe.call({ op: 'pidsOf', prefix: ['dtach', '-n', anchors.dtachSocket] })) as number[]) {
    await ctx.sandbox.exec(['kill', String(pid)]);
  }
}

interface RingRun {
  figures: Figure[];
  memory: Figure[];
}

async function oneRing(ctx: AttachContext, ring: number, rounds: number): Promise<RingRun> {
  const label = `${ring / MiB} MiB`;
  const go = `${ctx.account.cwd}/bench-go-kept-${ring}`;
  const kept = (await ctx.agent.call({ op: 'keepStart', argv: ['sh', '-c', writer(go, ring)], keepMs: 3_600_000, retainBytes: ring })) as { id: number; helperPid: number };
  const anchors = await startAnchors(ctx, String(ring), ring);
  await ctx.sandbox.exec(['touch', go], { as: 'client' });
  let listed: { id: number; next: number; state: string; controllers: number; observers: number }[] = [];
  await waitUntil(
    `${label} written while detached`,
    async () => {
      listed = (await ctx.agent.call({ op: 'keepList' })) as typeof listed;
      // No connection attached (its state may read "attached" for a START detached at once: see the report
      // in bench/results of this run).
      return listed.some((entry) => entry.id === kept.id && entry.next >= ring && entry.controllers === 0 && entry.observers === 0);
    },
    60_000,
    () => ({ id: kept.id, listed }),
  );
  const samples = new Map<string, Record<string, number>[]>([LIB, CLI, ...anchors.present].map((name) => [name, []]));
  // One unmeasured round: every path and the page cache warm.
  const one = async (name: string) => {
    if (name === LIB) return (await ctx.agent.call({ op: 'keepAttach', id: kept.id, from: 0, expect: ring })) as Record<string, number>;
    if (name === CLI) {
      const command = `/usr/bin/node ${INSTALL_DIR}/cli.js attach ${kept.id} --socket ${SOCKET_PATH} --from 0 --observe`;
      return (await ctx.rootProbe.call({ op: 'terminalAttach', command, asRoot: true, settleMs: 200 })) as Record<string, number>;
    }
    const command = name === TMUX ? `tmux -S ${quote(anchors.tmuxSocket)} attach -t bench` : `dtach -a ${quote(anchors.dtachSocket)} -r ctrl_l -z`;
    return (await ctx.rootProbe.call({ op: 'terminalAttach', command, account: ctx.account, settleMs: 200 })) as Record<string, number>;
  };
  for (const name of samples.keys()) await one(name);
  for (let round = 0; round < rounds; round += 1) {
    for (const name of rotation([...samples.keys()], round)) samples.get(name)!.push(await one(name));
  }
  const lib = samples.get(LIB)!;
  const figures = [
    figure(`${label}: connect→ATTACHED`, LIB, lib.map((s) => s.attached)),
    figure(`${label}: connect→first byte`, LIB, lib.map((s) => s.first)),
    figure(`${label}: connect→first byte`, CLI, samples.get(CLI)!.map((s) => s.first), 'ms', 'spawn in a terminal → first byte (a fresh Node)'),
    ...(samples.has(TMUX) ? [figure(`${label}: connect→first byte`, TMUX, samples.get(TMUX)!.map((s) => s.first), 'ms', 'spawn in a terminal → first byte (the screen redrawn)')] : []),
    ...(samples.has(DTACH) ? [figure(`${label}: connect→first byte`, DTACH, samples.get(DTACH)!.map((s) => s.first), 'ms', 'spawn in a terminal → first byte (^L echoed: dtach keeps no output)')] : []),
    figure(`${label}: connect→last replayed byte`, LIB, lib.map((s) => s.complete), 'ms', `bytes: ${lib.filter((s) => s.bytes === ring && s.oldest === 0).length}/${lib.length} exactly ${ring} from offset 0`),
    figure(`${label}: replay throughput`, LIB, lib.map((s) => ring / MiB / ((s.complete - s.first) / 1000)), 'MiB/s'),
  ];
  // Memory: detached (no connection), then with one connection attached and reading.
  const memory: Figure[] = [];
  const measure = async (state: string) => {
    const workers = (await ctx.rootProbe.call({ op: 'brokerChildren', brokerPid: await ctx.brokerPid() })) as number[];
    // One session runs: its worker is the oldest of the broker's other processes (the newest is the spare).
    const worker = workers.length > 1 ? workers[0] : undefined;
    const tmuxServer = (await ctx.rootProbe.call({ op: 'pidsOf', prefix: ['tmux', '-S', anchors.tmuxSocket, 'new-session'] })) as number[];
    const dtachMaster = (await ctx.rootProbe.call({ op: 'pidsOf', prefix: ['dtach', '-n', anchors.dtachSocket] })) as number[];
    const pids = [kept.helperPid, ...(worker ? [worker] : []), ...tmuxServer, ...dtachMaster];
    const m = (await ctx.rootProbe.call({ op: 'memoryOf', pids })) as Record<string, { uss: number } | undefined>;
    const mb = (pid: number | undefined) => (pid === undefined || !m[pid] ? NaN : m[pid]!.uss / 1024);
    memory.push(figure(`${label} ring, ${state}: helper USS`, 'opencode-pty', [mb(kept.helperPid)], 'MB'));
    memory.push(figure(`${label} ring, ${state}: worker USS`, 'opencode-pty', [mb(worker)], 'MB'));
    memory.push(figure(`${label} ring, ${state}: worker + helper USS`, 'opencode-pty', [mb(kept.helperPid) + mb(worker)], 'MB'));
    if (tmuxServer.length) memory.push(figure(`${label} written, ${state}: tmux server USS`, TMUX, [mb(tmuxServer[0])], 'MB', 'default history-limit (2000 lines)'));
    if (dtachMaster.length) memory.push(figure(`${label} written, ${state}: dtach master USS`, DTACH, [mb(dtachMaster[0])], 'MB'));
  };
  // Let the spare that replaced this session's worker finish starting.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  await measure('detached');
  await ctx.agent.call({ op: 'keepHold', id: kept.id });
  await new Promise((resolve) => setTimeout(resolve, 500));
  await measure('attached');
  await ctx.agent.call({ op: 'keepRelease' });
  await ctx.agent.call({ op: 'keepStop', id: kept.id });
  await stopAnchors(ctx, anchors);
  return { figures, memory };
}

export async function attachBench(ctx: AttachContext, rounds: number, rings: number[]): Promise<Section[]> {
  const figures: Figure[] = [];
  const memory: Figure[] = [];
  let anchor = TMUX;
  for (const ring of rings) {
    ctx.say(`attach: ${ring / MiB} MiB ring, ${rounds} rounds`);
    const run = await oneRing(ctx, ring, rounds);
    figures.push(...run.figures);
    if (!run.figures.some((f) => f.contender === TMUX)) anchor = LIB;
    memory.push(...run.memory);
  }
  return [
    withRatios({ title: 'Attach to a session that wrote a ring\'s worth while detached (ATTACH from 0 replays it; tmux redraws, dtach reconnects)', anchor, figures }),
    { title: 'Memory of a kept session (MB; USS = private clean + dirty), detached and with one connection attached', figures: memory },
  ];
}
