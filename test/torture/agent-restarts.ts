// Agent restarts: 16 kept sessions write while the agent stand-in is SIGKILLed and started again, 100
// times (3 at the fast scale). After each restart the agent LISTs, then ATTACHes to every session from
// the last offset it reported before it died, reads up to what LIST said was next, and stays attached
// until the next kill. Counted: sessions lost (missing from LIST, or not attachable), bytes lost where
// the ring still held them (every connection's bytes must be exactly the program's stream from where
// it starts; a TRUNCATED start is the ring's, counted apart), and the helpers' memory beside their rings.
import { createHash } from 'node:crypto';
import { AGENT_SERVICE, BROKER_UNIT } from '../sandbox/deploy.ts';
import { killSupervisor } from '../support/supervisor.ts';
import { Agent } from '../support/agent.ts';
import type { KeepAnswer } from '../support/agent-keep.ts';
import { until } from '../support/wait.ts';
import { brokerRss } from './harness.ts';
import type { TortureContext } from './report.ts';

/** Each session's ring: small, so that it is full from the first seconds and its memory is the bound's. */
export const RESTART_RING_BYTES = 64 * 1024;
/** The bound asserted on a helper's RSS: its ring plus this much (the helper's code, stacks and buffers:
 * about 2 MB measured with a 64 KiB ring), whatever the number of attaches it has served. */
export const HELPER_OVERHEAD_KB = 4096;
/** limits for this class: 16 kept sessions, beside the warm-up session every class starts with. */
export const RESTARTS_LIMITS = { maxSessions: 20, maxKept: 16 };

/**
 * Lines "1", "2", … : 20,000 at once (about 130 KB through the terminal, twice the ring), then 200 a
 * second (about 1.4 KB/s), for as long as the session lives.
 */
const WRITER = ['perl', '-e', '$| = 1; for ($i = 1; ; $i++) { print "$i\\n"; select(undef, undef, undef, 0.05) if $i > 20000 && $i % 10 == 0 }'];

/** The writer's stream as the terminal gives it (ONLCR), grown on demand. */
class Stream {
  #text = '';
  #lines = 0;
  slice(from: number, to: number): string {
    while (this.#text.length < to) {
      const more: string[] = [];
      for (let i = 0; i < 10_000; i += 1) more.push(`${(this.#lines += 1)}\r\n`);
      this.#text += more.join('');
    }
    return this.#text.slice(from, to);
  }
}

const sha = (text: string) => createHash('sha256').update(text).digest('hex');

interface Tracked {
  id: number;
  name: string;
  /** The offset after the last byte the agent reported having seen. */
  seen: number;
  helperPid: number;
}

interface Listed {
  id: number;
  state: string;
  oldest: number;
  next: number;
  mainPid: number;
}

export interface RestartFigures {
  restarts: number;
  sessions: number;
  sessionsLost: number;
  /** Bytes the agent asked for that the ring still held and that did not arrive exactly. */
  bytesLost: number;
  /** Bytes the ring had already let go (TRUNCATED), not losses. */
  bytesTruncated: number;
  /** Connections that began with a TRUNCATED (the agent's last word older than the ring's oldest byte). */
  truncatedConnections: number;
  bytesChecked: number;
  /** The largest helper RSS seen (kB), the first seen, and the ring (kB). */
  helperRssKb: { first: number; max: number; ring: number };
}

async function helperRssKb(ctx: TortureContext, pids: number[]): Promise<number[]> {
  const script = pids.map((pid) => `grep VmRSS /proc/${pid}/status 2>/dev/null || echo 'VmRSS: 0 kB'`).join('; ');
  const out = (await ctx.sandbox.exec(['sh', '-c', script])).stdout;
  return [...out.matchAll(/VmRSS:\s+(\d+)/g)].map((match) => Number(match[1]));
}

/**
 * Checks one connection's report against the stream; returns the bytes it lost and the ones the rings
 * had let go. Each TRUNCATED(oldest, dropped) says the bytes went on at `oldest` after `dropped` skipped
 * (at the start, when the agent's last word was older than the ring's oldest byte; or later, when a
 * burst overtook the connection's cursor: the controller's rule), so the bytes received are the
 * stream's segments between them, and their sha256 is known exactly.
 */
function judgeConnection(stream: Stream, from: number, answer: KeepAnswer): { lost: number; truncated: number; problem?: string } {
  const offset = answer.offset!;
  const truncated = answer.truncated ?? [];
  const dropped = truncated.reduce((sum, t) => sum + t.dropped, 0);
  const parts: string[] = [];
  let at = from;
  for (const t of truncated) {
    const cut = t.oldest - t.dropped;
    if (cut < at || t.oldest < cut) return { lost: answer.bytes!, truncated: dropped, problem: `TRUNCATED ${JSON.stringify(t)} does not follow offset ${at}` };
    parts.push(stream.slice(at, cut));
    at = t.oldest;
  }
  parts.push(stream.slice(at, offset));
  const expected = parts.join('');
  if (expected.length !== answer.bytes) {
    return { lost: Math.abs(expected.length - answer.bytes!), truncated: dropped, problem: `${answer.bytes} bytes from ${from} to ${offset}, ${expected.length} expected (TRUNCATED ${JSON.stringify(truncated)})` };
  }
  if (answer.sha256 !== sha(expected)) return { lost: answer.bytes!, truncated: dropped, problem: `the ${answer.bytes} bytes from ${from} are not the program's (TRUNCATED ${JSON.stringify(truncated)})` };
  return { lost: 0, truncated: dropped };
}

/** What each round does before the agent's restart: nothing more ('agent'), or the supervisor's too
 * ('supervisor': its unit stopped then SIGKILLed in odd rounds, `systemctl restart` in even ones), so
 * every kept session is adopted again by the next broker while it writes (issue 30). */
export type Disruption = 'agent' | 'supervisor';

async function restartSupervisor(ctx: TortureContext, round: number): Promise<void> {
  const { sandbox } = ctx;
  if (round % 2 === 0) {
    const restarted = await sandbox.systemctl('restart', BROKER_UNIT);
    if (restarted.code !== 0) throw new Error(`restart ${round}: ${restarted.stderr}`);
    return;
  }
  await killSupervisor(sandbox);
}

export async function runAgentRestarts(ctx: TortureContext, disruption: Disruption = 'agent'): Promise<{ cases: number; passed: number; unexpected: string[]; notes: string[]; driver: Agent; figures: RestartFigures }> {
  const { sandbox } = ctx;
  let driver = ctx.driver;
  const restarts = ctx.scale === 'full' ? 100 : 3;
  const count = 16;
  const unexpected: string[] = [];
  let passed = 0;
  const figures: RestartFigures = { restarts, sessions: count, sessionsLost: 0, bytesLost: 0, bytesTruncated: 0, truncatedConnections: 0, bytesChecked: 0, helperRssKb: { first: 0, max: 0, ring: RESTART_RING_BYTES / 1024 } };
  const streams = new Map<number, Stream>();
  /** The broker's RSS (MB) every 10 restarts: 1,600 attaches and 100 LISTs go through it at full scale. */
  const brokerMb: number[] = [];
  const tracked: Tracked[] = [];
  const check = (what: string, ok: boolean) => {
    if (ok) passed += 1;
    else unexpected.push(what);
  };
  try {
    const starts = await Promise.all(
      Array.from({ length: count }, (_, i) =>
        driver.keep({ op: 'start', name: `w${i}-0`, argv: WRITER, keepMs: 600_000, retainBytes: RESTART_RING_BYTES, label: `writer ${i}`, read: { bytes: 1024 } }),
      ),
    );
    for (const [i, started] of starts.entries()) {
      if (started.error) throw new Error(`writer ${i} did not start: ${started.error} ${started.message}`);
      tracked.push({ id: started.id!, name: `w${i}-0`, seen: started.offset!, helperPid: 0 });
      streams.set(started.id!, new Stream());
    }
    const sample = async () => {
      const rss = await helperRssKb(ctx, tracked.map((t) => t.helperPid).filter((pid) => pid > 0));
      if (rss.length && !figures.helperRssKb.first) figures.helperRssKb.first = Math.max(...rss);
      figures.helperRssKb.max = Math.max(figures.helperRssKb.max, ...rss);
    };
    for (let round = 1; round <= restarts; round += 1) {
      if (disruption === 'supervisor') await restartSupervisor(ctx, round);
      await sandbox.exec(['kill', '-KILL', String(driver.mainPid)]);
      await until(async () => (await sandbox.systemctl('is-active', AGENT_SERVICE)).stdout.trim() !== 'active', 10_000, 'the agent dead');
      // A SIGKILLed main process leaves its unit failed: cleared, as an operator's restart would.
      await sandbox.systemctl('reset-failed', AGENT_SERVICE);
      driver = await Agent.start(sandbox);
      let listed = ((await driver.keep({ op: 'list' })).list ?? []) as Listed[];
      // After the supervisor's restart each session waits for a worker of its own (16 Node starts on two
      // cores): LIST again until every one is adopted, within a bound (a session never listed is lost).
      if (disruption === 'supervisor') {
        await until(async () => {
          listed = ((await driver.keep({ op: 'list' })).list ?? []) as Listed[];
          return tracked.every((t) => listed.some((entry) => entry.id === t.id && entry.state !== 'unknown'));
        }, 60_000, 'every kept session adopted').catch(() => undefined);
      }
      const byId = new Map(listed.map((entry) => [entry.id, entry]));
      const answers = await Promise.all(
        tracked.map(async (t) => {
          const entry = byId.get(t.id);
          if (!entry || entry.state === 'ended' || entry.state === 'unknown') return { t, entry, answer: undefined };
          t.helperPid = entry.mainPid;
          const name = `w${t.id}-${round}`;
          // Up to what LIST said was next: the replay of everything since the agent's last word, then live.
          const answer = await driver.keep({ op: 'attach', name, id: t.id, from: t.seen, role: 'control', read: { bytes: Math.max(1, entry.next - Math.max(t.seen, entry.oldest)), ms: 30_000 } });
          return { t, entry, answer };
        }),
      );
      for (const { t, entry, answer } of answers) {
        const where = `restart ${round}, session ${t.id}`;
        const present = entry !== undefined && entry.state !== 'ended' && entry.state !== 'unknown' && answer !== undefined && !answer.error;
        check(`${where}: lost (${JSON.stringify(entry ?? 'not listed')}, ${answer?.error ?? ''} ${answer?.message ?? ''})`, present);
        if (!present) {
          figures.sessionsLost += 1;
          continue;
        }
        const judged = judgeConnection(streams.get(t.id)!, t.seen, answer!);
        figures.bytesLost += judged.lost;
        figures.bytesTruncated += judged.truncated;
        if (judged.truncated) figures.truncatedConnections += 1;
        figures.bytesChecked += answer!.bytes!;
        check(`${where}: ${judged.problem}`, judged.problem === undefined);
        t.seen = answer!.offset!;
        t.name = `w${t.id}-${round}`;
      }
      await sample();
      if (round % 10 === 0 || round === 1) brokerMb.push(Math.round((await brokerRss(sandbox)) / 2 ** 17) / 8);
      if (round % 10 === 0) ctx.note(`${disruption} restarts: ${round} of ${restarts}, ${figures.bytesChecked} bytes checked, helper RSS max ${figures.helperRssKb.max} kB`);
      // Every session lost stays lost: the rest go on.
      tracked.splice(0, tracked.length, ...tracked.filter((t) => byId.has(t.id)));
    }
  } finally {
    for (const t of tracked) await driver.keep({ op: 'stop-session', id: t.id }).catch(() => undefined);
  }
  if (disruption === 'supervisor') {
    // Nothing of a kept session outlives it: its rendezvous socket and record go with its unit.
    const left = async () => (await ctx.sandbox.exec(['sh', '-c', 'ls -A /run/opencode-pty-kept 2>/dev/null'])).stdout.trim();
    await until(async () => (await left()) === '', 20_000, 'the kept sessions\' files gone').catch(() => undefined);
    const files = await left();
    check(`sockets or records left: ${files}`, files === '');
  }
  const bound = figures.helperRssKb.ring + HELPER_OVERHEAD_KB;
  check(`helper RSS at most ${figures.helperRssKb.max} kB, beyond the bound of ring + ${HELPER_OVERHEAD_KB} kB = ${bound} kB`, figures.helperRssKb.max > 0 && figures.helperRssKb.max <= bound);
  const notes = [
    `${restarts} ${disruption === 'supervisor' ? 'supervisor restarts (SIGKILL and systemctl restart, alternated, each with the agent\'s)' : 'agent restarts (SIGKILL, then a new agent)'} with ${count} kept sessions writing: ${figures.sessionsLost} sessions lost, ${figures.bytesLost} bytes lost of ${figures.bytesChecked} checked, ${figures.bytesTruncated} let go by the rings (TRUNCATED on ${figures.truncatedConnections} connections: the first burst is twice a ring, the agent's first word was at its first KiB, and a burst may overtake a replaying controller)`,
    `helper RSS per kept session with a full ${figures.helperRssKb.ring} KiB ring: ${figures.helperRssKb.first} kB at the first restart, at most ${figures.helperRssKb.max} kB (bound asserted: ring + ${HELPER_OVERHEAD_KB} kB)`,
    `broker RSS (MB) after restart 1 and every 10th: ${brokerMb.join(', ')}`,
  ];
  return { cases: passed + unexpected.length, passed, unexpected, notes, driver, figures };
}
