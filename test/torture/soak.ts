// Soak: many short sessions one after another, then 16 long ones at once; broker fds and units back
// to baseline and the broker's RSS growth within a stated bound.
import { BROKER_UNIT } from '../sandbox/deploy.ts';
import { measure } from '../support/supervisor.ts';
import { brokerRss } from './harness.ts';
import type { TortureContext } from './report.ts';

/** RSS the broker may grow by over a soak: V8 settles its heaps within a few tens of MB; a leak of
 * even 10 KB a session would pass this over 5,000 sessions. */
export const RSS_GROWTH_BOUND_MB = 40;

/** The broker's status, the session units and their states, the broker's processes and the journal's end. */
async function supervisorState(ctx: TortureContext): Promise<string> {
  const { sandbox } = ctx;
  const status = (await sandbox.systemctl('show', '--property=StatusText,MainPID,NRestarts', BROKER_UNIT)).stdout;
  const units = (await sandbox.systemctl('list-units', '--all', '--plain', '--no-legend', 'opencode-pty-session-*')).stdout;
  const processes = (await sandbox.exec(['ps', '-eo', 'pid,ppid,stat,etimes,rss,args', '--sort=start_time'])).stdout;
  const journal = (await sandbox.exec(['journalctl', '-o', 'short-precise', '-n', '40', '--no-pager'])).stdout;
  // Workers alive for more than a few seconds in a soak of short sessions: everything they and
  // their units logged.
  const stale = processes
    .split('\n')
    .filter((line) => line.includes('worker.cjs'))
    .map((line) => line.trim().split(/\s+/))
    .filter((fields) => Number(fields[3]) > 5)
    .map((fields) => fields[0]!);
  let workers = '';
  for (const pid of stale) {
    const own = (await sandbox.exec(['journalctl', '-o', 'short-precise', '--no-pager', `_PID=${pid}`])).stdout;
    const units = [...new Set([...own.matchAll(/opencode-pty-session-[0-9a-f]+\.service/g)].map((m) => m[0]))];
    const theirs = units.length ? (await sandbox.exec(['journalctl', '-o', 'short-precise', '--no-pager', ...units.flatMap((u) => ['-u', u])])).stdout : '';
    const stack = (await sandbox.exec(['cat', `/proc/${pid}/wchan`, `/proc/${pid}/status`])).stdout.split('\n').filter((l) => /^(State|Threads)|^[a-z_]+$/.test(l)).join(' ');
    const fds = (await sandbox.exec(['ls', '-l', `/proc/${pid}/fd`])).stdout;
    workers += `\nworker ${pid} (${stack}):\n${own}\nits units:\n${theirs}\nits fds:\n${fds}`;
  }
  return `${status}\nunits:\n${units}\nprocesses:\n${processes}\njournal:\n${journal}${workers}`;
}

async function idleBroker(ctx: TortureContext): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (let pause = 10; ; pause = Math.min(pause * 2, 200)) {
    const status = (await ctx.sandbox.systemctl('show', '--property=StatusText', '--value', BROKER_UNIT)).stdout.trim();
    if (status.startsWith('0 sessions, 0 handshakes') || Date.now() > deadline) return;
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}

export async function runSoak(ctx: TortureContext): Promise<{ passed: number; cases: number; unexpected: string[]; notes: string[]; peakRssMb: number }> {
  const short = ctx.scale === 'full' ? 5000 : 40;
  const unexpected: string[] = [];
  const notes: string[] = [];
  const rssBefore = await brokerRss(ctx.sandbox);
  const fdsBefore = (await measure(ctx.sandbox)).brokerFds;
  let passed = 0;
  let peak = rssBefore;
  const batch = 250;
  /** RSS after each batch: a leak grows with the sessions, a heap settling flattens out. */
  const trajectory: string[] = [];
  for (let done = 0; done < short; done += batch) {
    const { results } = await ctx.driver.command<{ results: Array<{ ok: boolean; output?: string; error?: string }> }>({
      sequential: { count: Math.min(batch, short - done), argv: ['sh', '-c', 'echo x'] },
    });
    let failed = 0;
    for (const result of results) {
      if (result.ok && result.output === 'x\r\n') passed += 1;
      else {
        failed += 1;
        unexpected.push(`short session ${done + passed + failed}: ${JSON.stringify(result)}`);
      }
    }
    if (failed > 0) {
      // What the supervisor looks like right now says more than the count: keep it, and stop here.
      notes.push(`after ${done + results.length} short sessions, ${failed} of the batch failed; the state then:\n${await supervisorState(ctx)}`);
      break;
    }
    const rss = await brokerRss(ctx.sandbox);
    peak = Math.max(peak, rss);
    trajectory.push(`${done + results.length}:${(rss / 2 ** 20).toFixed(0)}`);
    if (ctx.scale === 'full') ctx.note(`soak: ${done + results.length} of ${short} short sessions, broker RSS ${(rss / 2 ** 20).toFixed(1)} MB`);
  }
  // A client has its EXIT a moment before its worker is gone and its slot free: wait for all 16.
  await idleBroker(ctx);
  const long = await ctx.driver.sessions(16, ['sh', '-c', 'sleep 2; echo long']);
  for (const result of long) {
    if (result.ok && result.output === 'long\r\n') passed += 1;
    else unexpected.push(`long session: ${JSON.stringify(result)}`);
  }
  const rssAfter = await brokerRss(ctx.sandbox);
  peak = Math.max(peak, rssAfter);
  const growthMb = (rssAfter - rssBefore) / 2 ** 20;
  notes.push(`broker RSS ${(rssBefore / 2 ** 20).toFixed(1)} MB before, ${(rssAfter / 2 ** 20).toFixed(1)} MB after ${short} + 16 sessions (bound: +${RSS_GROWTH_BOUND_MB} MB); fds ${fdsBefore} before`);
  notes.push(`broker RSS (MB) after each batch of short sessions: ${trajectory.join(' ')}`);
  if (growthMb > RSS_GROWTH_BOUND_MB) unexpected.push(`broker RSS grew ${growthMb.toFixed(1)} MB`);
  return { passed, cases: short + 16, unexpected, notes, peakRssMb: peak / 2 ** 20 };
}
