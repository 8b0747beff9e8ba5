// Faults: processes killed mid-session, systemd reloaded, the bus restarted, the agent restarted;
// each time the broker serves the next session and nothing of the dead session remains.
import { AGENT_SERVICE, BROKER_UNIT } from '../sandbox/deploy.ts';
import { Agent, AGENT_SCRIPT } from '../support/agent.ts';
import { brokerPid, measure } from '../support/supervisor.ts';
import type { SessionResult, HeldResult } from '../support/agent-main.ts';
import type { TortureContext } from './report.ts';

interface FaultOutcome {
  passed: number;
  unexpected: string[];
  notes: string[];
}

async function waitFor(probe: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let pause = 20; !(await probe()); pause = Math.min(pause * 2, 250)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}

async function pids(ctx: TortureContext, pattern: string): Promise<number[]> {
  const found = await ctx.sandbox.exec(['pgrep', '-f', pattern]);
  return found.stdout.split('\n').filter(Boolean).map(Number);
}

/** The session units' main PIDs (the session helpers). */
async function helperPids(ctx: TortureContext): Promise<number[]> {
  const units = (await measure(ctx.sandbox)).units;
  const out: number[] = [];
  for (const unit of units) {
    const pid = Number((await ctx.sandbox.systemctl('show', '--property=MainPID', '--value', unit)).stdout.trim());
    if (pid > 0) out.push(pid);
  }
  return out;
}

/** The faults class's write timeout (suite.ts): a held-back client outlasts it many times over. */
export const FAULTS_WRITE_TIMEOUT_MS = 2000;
/** ERROR FLOW (docs/protocol.md). */
const FLOW = 9;

/** Resident memory of the session's helper and of every worker, in KiB. */
async function sessionRssKb(ctx: TortureContext): Promise<number> {
  const pidsNow = [...(await helperPids(ctx)), ...(await pids(ctx, '/opt/opencode-pty/worker.cjs'))];
  let total = 0;
  for (const pid of pidsNow) {
    const status = await ctx.sandbox.exec(['cat', `/proc/${pid}/status`]);
    total += Number(/VmRSS:\s+(\d+)/.exec(status.stdout)?.[1] ?? 0);
  }
  return total;
}

export async function runFaults(ctx: TortureContext): Promise<FaultOutcome & { driver: Agent }> {
  const out: FaultOutcome = { passed: 0, unexpected: [], notes: [] };
  const { sandbox } = ctx;
  let driver = ctx.driver;
  const marker = `${sandbox.client.home}/.torture-go`;
  const waiting = ['sh', '-c', `trap "" HUP TERM; while [ ! -e ${marker} ]; do sleep 0.1; done; echo done`];
  const step = async (what: string, run: () => Promise<void>) => {
    ctx.note(`faults: ${what}`);
    try {
      const started = Date.now();
      await run();
      ctx.note(`faults: ${what}: done in ${Date.now() - started} ms`);
      // Whatever happened, the next session starts and ends.
      const [next] = await driver.sessions(1, ['sh', '-c', 'echo next']);
      if (!next!.ok || next!.output !== 'next\r\n') throw new Error(`the next session failed: ${JSON.stringify(next)}`);
      out.passed += 1;
    } catch (error) {
      out.unexpected.push(`${what}: ${(error as Error).message}`);
      ctx.note(`faults: ${what}: FAILED: ${(error as Error).message}`);
    }
  };
  // Wrapped: an async function returning the promise itself would wait for the session to end.
  const oneRunning = async (): Promise<{ running: Promise<SessionResult[]> }> => {
    await sandbox.exec(['rm', '-f', marker]);
    // What an earlier step left (an orphan the next broker is stopping) goes first: the count below must mean this session.
    await waitFor(async () => (await measure(sandbox)).units.length === 0, 30_000, 'no session unit before the step');
    const before = 0;
    const running = driver.sessions(1, waiting);
    // Awaited by the step later; a failure before then must not go unhandled meanwhile.
    running.catch(() => undefined);
    await waitFor(async () => (await measure(sandbox)).units.length > before, 15_000, 'the session unit');
    return { running };
  };

  await step('kill -9 the worker mid-session', async () => {
    const { running } = await oneRunning();
    const busy = await pids(ctx, '/opt/opencode-pty/worker.cjs');
    for (const pid of busy) await sandbox.exec(['kill', '-KILL', String(pid)]);
    const [result] = await running;
    if (result!.ok) throw new Error(`the session survived its worker: ${JSON.stringify(result)}`);
    await waitFor(async () => (await measure(sandbox)).units.length === 0, 20_000, 'the unit to be stopped');
  });

  await step('kill -9 the session helper: the client sees the connection close without a last frame', async () => {
    const { running } = await oneRunning();
    for (const pid of await helperPids(ctx)) await sandbox.exec(['kill', '-KILL', String(pid)]);
    const [result] = await running;
    // Where the worker still relays the data phase it reports the helper's death as an EXIT (killed,
    // signal 9); where the helper owns the client connection, the client sees it close with no frame.
    out.notes.push(`helper killed: the client saw ${result!.ok ? `EXIT ${JSON.stringify(result!.exit)}` : result!.error}`);
  });

  await step('kill -9 the broker mid-session', async () => {
    const { running } = await oneRunning();
    const pid = await brokerPid(sandbox);
    await sandbox.exec(['kill', '-KILL', String(pid)]);
    await sandbox.exec(['touch', marker], { as: 'client' });
    const [result] = await running;
    out.notes.push(`broker killed: its session ${result!.ok ? 'ended normally' : `ended with ${result!.error}`}`);
    await waitFor(async () => (await sandbox.systemctl('show', '--property=ActiveState', '--value', BROKER_UNIT)).stdout.trim() !== 'active', 20_000, 'the broker unit to stop');
  });

  await step('SIGKILL to the whole broker unit with a session that ignores SIGTERM and SIGHUP', async () => {
    const { running } = await oneRunning();
    await sandbox.systemctl('kill', '--signal=SIGKILL', BROKER_UNIT);
    await waitFor(async () => (await sandbox.systemctl('show', '--property=ActiveState', '--value', BROKER_UNIT)).stdout.trim() !== 'active', 20_000, 'the broker unit to die');
    // The session's helper, its worker gone, ends the program itself in steps (hang-up, SIGTERM,
    // SIGKILL: docs/architecture.md "The helper's end, in one place"); a next broker serves beside it.
    const [next] = await driver.sessions(1, ['true']);
    if (!next!.ok) throw new Error(`no session beside the ending one: ${JSON.stringify(next)}`);
    await running;
    await waitFor(async () => (await measure(sandbox)).units.length === 0, 30_000, 'the session unit to be gone');
  });

  await step('systemctl daemon-reload mid-session', async () => {
    const { running } = await oneRunning();
    await sandbox.systemctl('daemon-reload');
    await sandbox.exec(['touch', marker], { as: 'client' });
    const [result] = await running;
    if (!result!.ok || result!.output !== 'done\r\n') throw new Error(`the session did not survive the reload: ${JSON.stringify(result)}`);
  });

  await step('systemctl restart dbus mid-session', async () => {
    const { running } = await oneRunning();
    const pid = await brokerPid(sandbox);
    const restarted = await sandbox.systemctl('restart', 'dbus.service');
    if (restarted.code !== 0) throw new Error(restarted.stderr);
    await waitFor(async () => (await sandbox.journal(BROKER_UNIT)).includes('D-Bus connection back'), 20_000, 'the broker to reconnect');
    await sandbox.exec(['touch', marker], { as: 'client' });
    const [result] = await running;
    if (!result!.ok || result!.output !== 'done\r\n') throw new Error(`the session did not survive the bus restart: ${JSON.stringify(result)}`);
    if ((await brokerPid(sandbox)) !== pid) throw new Error('the broker was replaced');
  });

  await step('the client killed during an output flood', async () => {
    const child = await driver.background(['/usr/bin/node', AGENT_SCRIPT, 'once', JSON.stringify({ sessions: { count: 1, argv: ['yes'] } })]);
    await waitFor(async () => (await measure(sandbox)).units.length === 1, 15_000, 'the flooding session');
    await sandbox.exec(['kill', '-KILL', String(child.pid)]);
    await waitFor(async () => (await measure(sandbox)).units.length === 0, 20_000, 'the unit to go with its client');
  });

  const withholdMs = ctx.scale === 'full' ? 60_000 : 3 * FAULTS_WRITE_TIMEOUT_MS;
  await step(`a client that grants no credit for ${withholdMs / 1000} s while the program writes`, async () => {
    await waitFor(async () => (await measure(sandbox)).units.length === 0, 30_000, 'no session unit before the step');
    const count = 200_000;
    const held = driver.command<HeldResult>({ withholdCredit: { ms: withholdMs, count } });
    held.catch(() => undefined);
    await waitFor(async () => (await measure(sandbox)).units.length === 1, 15_000, 'the session unit').catch(async (error: Error) => {
      throw new Error(`${error.message}; the client saw ${JSON.stringify(await held)}`);
    });
    // Memory once the first window is out and the program blocks, and again near the end.
    await new Promise((resolve) => setTimeout(resolve, FAULTS_WRITE_TIMEOUT_MS / 2));
    const early = await sessionRssKb(ctx);
    await new Promise((resolve) => setTimeout(resolve, withholdMs - FAULTS_WRITE_TIMEOUT_MS));
    const late = await sessionRssKb(ctx);
    const result = await held;
    out.notes.push(`no credit for ${withholdMs / 1000} s: helper + workers RSS ${(early / 1024).toFixed(1)} → ${(late / 1024).toFixed(1)} MB; then ${result.bytes} bytes, intact ${result.intact}, exit ${JSON.stringify(result.exit)}`);
    if (!result.ok || !result.intact || result.exit?.status !== 0) throw new Error(`output lost or the session failed: ${JSON.stringify(result)}`);
    // Bounded: what is held is the kernel's (terminal and socket buffers), not ours.
    if (late - early > 2048) throw new Error(`session memory grew ${late - early} KiB while credit was withheld`);
  });

  await step('a client that stops reading with credit outstanding: ERROR FLOW after the queued output', async () => {
    await waitFor(async () => (await measure(sandbox)).units.length === 0, 30_000, 'no session unit before the step');
    const pausedMs = 4 * FAULTS_WRITE_TIMEOUT_MS;
    const held = driver.command<HeldResult>({ stopReading: { ms: pausedMs, grant: 4 * 1024 * 1024 } });
    held.catch(() => undefined);
    await waitFor(async () => (await measure(sandbox)).units.length === 1, 15_000, 'the session unit').catch(async (error: Error) => {
      throw new Error(`${error.message}; the client saw ${JSON.stringify(await held)}`);
    });
    await waitFor(async () => (await measure(sandbox)).units.length === 0, pausedMs, 'the unit to be gone while the client does not read');
    const goneAt = Date.now();
    const result = await held;
    out.notes.push(`stopped reading: unit gone ${result.resumedAt - goneAt} ms before the client read again; then ${JSON.stringify(result.frames)} (${result.bytes} bytes)`);
    if (!result.ok || goneAt > result.resumedAt) throw new Error(`the unit outlived the write timeout: ${JSON.stringify(result)}`);
    const frames = result.frames ?? [];
    const last = frames.at(-1);
    if (last !== `error:${FLOW}` || !frames[0]?.startsWith('output') || frames.length !== 2) throw new Error(`expected OUTPUT then ERROR FLOW: ${JSON.stringify(result)}`);
  });

  const restarts = ctx.scale === 'full' ? 20 : 3;
  await step(`the agent unit restarted ${restarts} times`, async () => {
    for (let i = 0; i < restarts; i += 1) {
      await sandbox.systemctl('stop', AGENT_SERVICE);
      driver = await Agent.start(sandbox);
      const [result] = await driver.sessions(1, ['true']);
      if (!result!.ok) throw new Error(`restart ${i + 1}: ${JSON.stringify(result)}`);
    }
  });
  await sandbox.exec(['touch', marker], { as: 'client' });
  return { ...out, driver };
}
