// Bad peers: the wrong account, the right account outside the agent unit, peers that vanish or
// crawl, and floods, while the agent's MainPID and a child of the agent unit keep starting sessions.
import { SOCKET_GROUP } from '../sandbox/index.ts';
import { AGENT_SERVICE, SOCKET_PATH } from '../sandbox/deploy.ts';
import { AGENT_SCRIPT } from '../support/agent.ts';
import { brokerPid } from '../support/supervisor.ts';
import type { RawResult, SessionResult } from '../support/agent-main.ts';
import { percentile } from './harness.ts';
import type { FloodFigures, TortureContext } from './report.ts';

const AUTHENTICATION = 3;
const HANDSHAKE_TIMEOUT = 6;

interface PeerOutcome {
  passed: number;
  unexpected: string[];
  notes: string[];
  floods: FloodFigures[];
}

/** The driver run once as someone else (outside the agent unit). */
export async function outside(ctx: TortureContext, who: { as?: 'client' | 'other'; uid?: number; gid?: number; groups?: number[] }, command: unknown): Promise<RawResult> {
  const run = await ctx.sandbox.exec(['/usr/bin/node', AGENT_SCRIPT, 'once', JSON.stringify(command), '/'], { ...who, timeoutMs: 60_000 });
  if (run.code !== 0) throw new Error(`driver as ${JSON.stringify(who)}: ${run.stderr}`);
  return JSON.parse(run.stdout) as RawResult;
}

async function brokerCpuTicks(ctx: TortureContext): Promise<number> {
  const pid = await brokerPid(ctx.sandbox);
  if (!(pid > 0)) return 0;
  const stat = (await ctx.sandbox.exec(['cat', `/proc/${pid}/stat`])).stdout;
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

/** Starts each agent loop makes in a flood case: this class's loops stay well under 120 a minute. */
const STARTS_PER_LOOP = 8;

/** Runs `flood` for `durationMs` while the MainPID and a child of the agent start sessions one after another. */
export async function underFlood(ctx: TortureContext, durationMs: number, flood: () => Promise<unknown>, childToo: boolean, paceMs = durationMs / STARTS_PER_LOOP): Promise<FloodFigures> {
  const ticks = await brokerCpuTicks(ctx);
  const started = Date.now();
  const argv = ['true'];
  // Paced, not as fast as they can: every process of the agent unit, the MainPID included, shares
  // the broker's 120 admissions a rolling minute (admission.ts, as the seeds), and this class's four
  // floods run within one minute. Unpaced, the MainPID alone made about 40 starts a case, so a child of the
  // agent met the rate's ADMISSION in the third case: the documented limit, not a flood's effect.
  // (The MainPID alone is never refused for the rate: its reserved slot is exempt from it.)
  const [, main, child] = await Promise.all([
    flood(),
    ctx.driver.command<{ results: SessionResult[] }>({ sequential: { durationMs, argv, paceMs } }),
    childToo ? ctx.driver.asChild<{ results: SessionResult[] }>({ sequential: { durationMs, argv, paceMs } }) : Promise.resolve({ results: [] as SessionResult[] }),
  ]);
  const cpu = (await brokerCpuTicks(ctx)) - ticks;
  const all = [...main.results, ...child.results];
  const ok = all.filter((r) => r.ok).map((r) => r.ms);
  const counts = new Map<string, number>();
  for (const r of all) if (!r.ok) counts.set(String(r.error), (counts.get(String(r.error)) ?? 0) + 1);
  return {
    causes: [...counts].map(([cause, n]) => `${cause}×${n}`),
    starts: all.length,
    failures: all.length - ok.length,
    p50Ms: percentile(ok, 50),
    p99Ms: percentile(ok, 99),
    samplesMs: ok,
    brokerCpu: cpu / 100 / ((Date.now() - started) / 1000),
  };
}

export async function runPeerCases(ctx: TortureContext, assertFloods: boolean): Promise<PeerOutcome> {
  const out: PeerOutcome = { passed: 0, unexpected: [], notes: [], floods: [] };
  const { sandbox } = ctx;
  const check = (what: string, ok: boolean, detail: unknown) => {
    if (ok) out.passed += 1;
    else out.unexpected.push(`${what}: ${JSON.stringify(detail)}`);
  };
  // Everyone here may reach the 0660 socket through its group, as a member of that group could.
  const socketGroup = [SOCKET_GROUP.gid];
  const asClient = { as: 'client' as const, groups: socketGroup };
  // The wrong account: AUTHENTICATION, final (a client must not retry it).
  const wrong = [
    { what: 'wrong uid', who: { as: 'other' as const, groups: socketGroup } },
    { what: 'wrong gid', who: { uid: sandbox.client.uid, gid: sandbox.other.gid, groups: socketGroup } },
  ];
  for (const { what, who } of wrong) {
    const result = await outside(ctx, who, { raw: { silent: true } });
    check(what, result.code === AUTHENTICATION, result);
  }
  // Root is admitted for version 3's kept-session requests (principals.ts, issue 29): refused at its
  // HELLO when it offers only versions 1 and 2; silent, it meets the handshake deadline like anyone.
  const rootV2 = await outside(ctx, {}, { raw: { first: '01000000084f43505400010002', halfClose: true } });
  check('root offering versions 1..2', rootV2.code === AUTHENTICATION, rootV2);
  const rootSilent = await outside(ctx, {}, { raw: { silent: true, waitMs: 10_000 } });
  check('root, silent', rootSilent.code === HANDSHAKE_TIMEOUT, rootSilent);
  const stranger = await outside(ctx, asClient, { raw: {} });
  check('the client account outside the agent unit', stranger.code === AUTHENTICATION, stranger);
  // A unit whose name only looks like the agent's.
  const lookalike = await sandbox.exec([
    'systemd-run', '--quiet', '--wait', '--pipe', '--collect', `--unit=${AGENT_SERVICE.replace('.service', '-lookalike.service')}`,
    `--uid=${sandbox.client.user}`, `--gid=${sandbox.client.group}`, `--property=SupplementaryGroups=${SOCKET_GROUP.name}`, '--', '/usr/bin/node', AGENT_SCRIPT, 'once', JSON.stringify({ raw: {} }), '/',
  ], { timeoutMs: 30_000 });
  const lookalikeResult = JSON.parse(lookalike.stdout || '{}') as RawResult;
  check('a look-alike unit name', lookalikeResult.code === AUTHENTICATION, lookalikeResult);
  // A peer that exits right after connecting, from inside the agent unit: the broker must not mind.
  await ctx.driver.command({ run: ['/usr/bin/node', AGENT_SCRIPT, 'once', JSON.stringify({ connectAndExit: true })] });
  const after = await ctx.driver.sessions(1, ['true']);
  check('a session right after a peer that exited at once', after[0]!.ok, after);
  // Slowloris from inside the agent unit (outside it, the peer is refused at accept): one HELLO
  // byte a second is cut at the handshake deadline.
  const slow = await ctx.driver.asChild<RawResult>({ raw: { dripMs: 1000, waitMs: 15_000 } });
  check('slowloris', slow.code === HANDSHAKE_TIMEOUT, slow);

  const durationMs = ctx.scale === 'full' ? 10_000 : 2_000;
  const idle = ctx.scale === 'full' ? 1000 : 100;
  // Floods from outside the agent unit: the MainPID and a child of the agent keep starting sessions.
  const outsideFlood = await underFlood(ctx, durationMs, () => outside(ctx, asClient, { flood: { concurrency: idle, durationMs, mode: 'silent' } }), true);
  out.floods.push(outsideFlood);
  out.notes.push(`${idle} idle connections from outside the agent unit: agent ${outsideFlood.failures}/${outsideFlood.starts} failed, p50 ${outsideFlood.p50Ms.toFixed(0)} ms, p99 ${outsideFlood.p99Ms.toFixed(0)} ms, broker CPU ${(outsideFlood.brokerCpu * 100).toFixed(0)}% of a core`);
  // HELLO floods run past the admission rate (120 a minute, 200 tried and more): the MainPID's
  // reserved slot is exempt from the rate.
  const rateFlood = await underFlood(ctx, durationMs, () => outside(ctx, asClient, { flood: { concurrency: 8, durationMs, mode: 'hello' } }), false);
  out.floods.push(rateFlood);
  out.notes.push(`HELLO flood past the admission rate: MainPID ${rateFlood.failures}/${rateFlood.starts} failed, p99 ${rateFlood.p99Ms.toFixed(0)} ms, broker CPU ${(rateFlood.brokerCpu * 100).toFixed(0)}%`);
  // A program inside a session floods the socket (reached through another process's /proc root).
  const socketVia = `/proc/${ctx.driver.mainPid}/root${SOCKET_PATH}`;
  const inSession = await underFlood(
    ctx,
    durationMs,
    () => ctx.driver.asChild({ sessions: { count: 1, argv: ['/usr/bin/node', AGENT_SCRIPT, 'once', JSON.stringify({ flood: { concurrency: 64, durationMs, mode: 'silent', socket: socketVia } }), '/'] } }),
    true,
  );
  out.floods.push(inSession);
  out.notes.push(`a session's program flooding: agent ${inSession.failures}/${inSession.starts} failed, p99 ${inSession.p99Ms.toFixed(0)} ms${inSession.causes.length ? `: ${inSession.causes.join('; ')}` : ''}`);
  for (const [what, figures] of [['outside flood', outsideFlood], ['rate flood', rateFlood], ['session flood', inSession]] as const) {
    const kept = figures.failures === 0 && figures.starts > 0;
    if (assertFloods) check(`${what}: the agent keeps starting sessions`, kept, figures);
    else if (!kept) out.notes.push(`NOT YET: ${what}: ${figures.failures} of ${figures.starts} agent starts failed`);
  }
  return out;
}

/**
 * A child of the agent unit floods (inside the unit), silent connections the tarpit paces, then
 * connect-and-close with no wait; alternated with the same starts and no flood, so the MainPID's
 * figures stand beside its own baseline at this moment's load (issue 31: within 2x its p99). Run last
 * in the class: the flood spends the minute's 120 admissions (the seeds' rate, shared by every process
 * of the unit), so a child's request right after it meets ADMISSION, as documented.
 */
export async function runInsideFloodCases(ctx: TortureContext, assertFloods: boolean): Promise<PeerOutcome> {
  const out: PeerOutcome = { passed: 0, unexpected: [], notes: [], floods: [] };
  const check = (what: string, ok: boolean, detail: unknown) => {
    if (ok) out.passed += 1;
    else out.unexpected.push(`${what}: ${JSON.stringify(detail)}`);
  };
  const durationMs = ctx.scale === 'full' ? 10_000 : 2_000;
  const rounds = ctx.scale === 'full' ? 2 : 1;
  const paceMs = durationMs / 20;
  const runs: Record<'quiet' | 'silent' | 'burst', FloodFigures[]> = { quiet: [], silent: [], burst: [] };
  let burstConnections = 0;
  let burstCpuMs = 0;
  for (let round = 0; round < rounds; round += 1) {
    runs.quiet.push((await insideFloodRound(ctx, durationMs, undefined, paceMs)).figures);
    runs.silent.push((await insideFloodRound(ctx, durationMs, 'silent', paceMs)).figures);
    const burst = await insideFloodRound(ctx, durationMs, 'burst', paceMs);
    runs.burst.push(burst.figures);
    burstConnections += burst.flood?.answers.connected ?? 0;
    burstCpuMs += burst.flood?.answers.cpuMs ?? 0;
  }
  const quiet = pooled(runs.quiet);
  const insideFlood = pooled(runs.silent);
  const burstFlood = pooled(runs.burst);
  out.floods.push(insideFlood, burstFlood);
  const versus = (figures: FloodFigures) =>
    `MainPID ${figures.failures}/${figures.starts} failed, p50/p99 ${figures.p50Ms.toFixed(0)}/${figures.p99Ms.toFixed(0)} ms against ${quiet.p50Ms.toFixed(0)}/${quiet.p99Ms.toFixed(0)} ms with no flood (p99 ${(figures.p99Ms / quiet.p99Ms).toFixed(2)}x), broker CPU ${(figures.brokerCpu * 100).toFixed(0)}% of a core (${(quiet.brokerCpu * 100).toFixed(0)}% with no flood)`;
  out.notes.push(`a child of the agent flooding, silent (${rounds} x ${durationMs / 1000} s, alternated): ${versus(insideFlood)}`);
  out.notes.push(`a child of the agent flooding, connect and close (${Math.round(burstConnections / ((rounds * durationMs) / 1000))} connections a second, the flood's own CPU ${((burstCpuMs / (rounds * durationMs)) * 100).toFixed(0)}% of a core): ${versus(burstFlood)}`);
  for (const [what, figures] of [['silent', insideFlood], ['connect and close', burstFlood]] as const) {
    if (figures.p99Ms > 2 * quiet.p99Ms) out.notes.push(`ABOVE GOAL: inside flood (${what}): the MainPID's p99 is ${(figures.p99Ms / quiet.p99Ms).toFixed(2)}x its no-flood p99 (goal: at most 2x)`);
  }
  for (const [what, figures] of [['inside flood', insideFlood], ['inside burst flood', burstFlood]] as const) {
    const kept = figures.failures === 0 && figures.starts > 0;
    if (assertFloods) check(`${what}: the agent keeps starting sessions`, kept, figures);
    else if (!kept) out.notes.push(`NOT YET: ${what}: ${figures.failures} of ${figures.starts} agent starts failed`);
  }
  return out;
}

/** Rounds of one case as one: percentiles over every start, the broker's CPU averaged. */
export function pooled(runs: FloodFigures[]): FloodFigures {
  const samplesMs = runs.flatMap((run) => run.samplesMs);
  return {
    causes: runs.flatMap((run) => run.causes),
    starts: runs.reduce((sum, run) => sum + run.starts, 0),
    failures: runs.reduce((sum, run) => sum + run.failures, 0),
    p50Ms: percentile(samplesMs, 50),
    p99Ms: percentile(samplesMs, 99),
    samplesMs,
    brokerCpu: runs.reduce((sum, run) => sum + run.brokerCpu, 0) / Math.max(runs.length, 1),
  };
}

export type FloodMode = 'silent' | 'reconnect' | 'burst';

/** A child of the agent unit flooding the socket: 64 lanes (agent-main.ts flood()). */
export function childFlood(ctx: TortureContext, durationMs: number, mode: FloodMode = 'silent'): Promise<FloodReport> {
  return ctx.driver.asChild<FloodReport>({ flood: { concurrency: 64, durationMs, mode } });
}

export interface FloodReport {
  opened: number;
  answers: Record<string, number>;
}

/** One round of the MainPID's sequential starts, with a child of the agent unit flooding or not. */
export async function insideFloodRound(ctx: TortureContext, durationMs: number, mode: FloodMode | undefined, paceMs?: number): Promise<{ figures: FloodFigures; flood?: FloodReport }> {
  let flood: FloodReport | undefined;
  const figures = await underFlood(ctx, durationMs, async () => (mode ? (flood = await childFlood(ctx, durationMs, mode)) : undefined), false, paceMs);
  return { figures, flood };
}
