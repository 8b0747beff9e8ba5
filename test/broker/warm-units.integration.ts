// Warm units through the real broker (docs/architecture.md "Warm units"): the spare's unit waits,
// started, with no terminal; a START drawn from it runs as a fresh one would; a helper its user stopped
// or killed costs a fallback to a fresh unit, never the START; a broker killed outright leaves its warm
// unit to the next broker's orphan scan.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Sandbox } from '../sandbox/index.ts';
import { BROKER_UNIT, CONFIG_PATH, INSTALL_DIR, SOCKET_PATH, deployConfig } from '../sandbox/deploy.ts';
import type { Agent, RunResult } from '../support/agent.ts';
import { bootSupervisor, stopBroker } from '../support/supervisor.ts';
import { until } from '../support/wait.ts';

let sandbox: Sandbox;
let agent: Agent;

const CLI = ['/usr/bin/node', `${INSTALL_DIR}/cli.js`];
const WARM_DESCRIPTION = 'opencode-pty warm session';
/** One worker a session: the spare alone is idle, so there is one warm unit at a time. */
const CONFIG = { limits: { sessionsPerWorker: 1, idleExitMs: 600_000 } };

test.before(async () => {
  ({ sandbox, agent } = await bootSupervisor('broker-warm', { ...CONFIG, session: { warmUnits: 1 } }));
  // The broker's first spare has no warm unit (socket activation started it for a client already
  // waiting); the next spare starts one.
  const first = await agent.session(['true']);
  assert.is(first.code, 0, first.stderr);
});

test.after(async () => {
  await agent?.release();
  await stopBroker(sandbox).catch(() => undefined);
  await sandbox?.stop();
});

/** Loaded session units: name, active state, description. */
async function units(): Promise<{ unit: string; active: string; description: string }[]> {
  const result = await sandbox.systemctl('list-units', '--all', '--plain', '--no-legend', 'opencode-pty-session-*');
  return result.stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [unit, , active, , ...rest] = line.trim().split(/\s+/);
      return { unit: unit!, active: active!, description: rest.join(' ') };
    });
}

async function mainPid(unit: string): Promise<number> {
  return Number((await sandbox.systemctl('show', '--property=MainPID', '--value', unit)).stdout.trim());
}

/** The warm unit, once its helper runs and sleeps on its channel (it has sent HELLO by then). */
async function readyWarm(): Promise<{ unit: string; pid: number }> {
  let found: { unit: string; pid: number } | undefined;
  await until(
    async () => {
      const warm = (await units()).find((one) => one.active === 'active' && one.description === WARM_DESCRIPTION);
      if (!warm) return false;
      const pid = await mainPid(warm.unit);
      const stat = await sandbox.exec(['cat', `/proc/${pid}/stat`]);
      const cmdline = await sandbox.exec(['cat', `/proc/${pid}/cmdline`]);
      if (!cmdline.stdout.includes('--warm') || !/^\d+ \(.*\) S /.test(stat.stdout)) return false;
      found = { unit: warm.unit, pid };
      return true;
    },
    15_000,
    'a warm unit whose helper waits',
    async () => JSON.stringify(await units()),
  );
  return found!;
}

const journal = () => sandbox.journal(BROKER_UNIT);

test('a START drawn from the warm unit runs the program in the handed directory, as the client, with its argv and environment', async () => {
  const warm = await readyWarm();
  const script = 'pwd; id -un; printf "[%s]" "$@"; echo; echo "$WARM_TEST"; tty';
  const run = await agent.command<RunResult>({ run: [...CLI, 'run', '--socket', SOCKET_PATH, '--cwd', '/usr/bin', '--env', 'WARM_TEST=yes $HOME', '--', 'sh', '-c', script, 'sh', 'a b', '$c'] });
  assert.is(run.code, 0, run.stderr);
  const lines = run.stdout.split('\r\n');
  assert.is(lines[0], '/usr/bin');
  assert.is(lines[1], sandbox.client.user);
  assert.is(lines[2], '[a b][$c]');
  assert.is(lines[3], 'yes $HOME');
  assert.match(lines[4]!, /^\/dev\/pts\/\d+$/);
  assert.match(await journal(), new RegExp(`session ${warm.unit} started for pid \\d+: "sh", \\d+x\\d+, in a warm unit`));
});

test('a warm helper holds no terminal and runs no program before its START; status shows it as warm', async () => {
  const warm = await readyWarm();
  const fds = await sandbox.exec(['ls', '-l', `/proc/${warm.pid}/fd`]);
  assert.is(fds.code, 0, fds.stderr);
  assert.not.match(fds.stdout, /ptmx|\/dev\/pts/, fds.stdout);
  // What a warm unit never drawn costs, told (docs/architecture.md "Warm units"): its helper's USS.
  const rollup = (await sandbox.exec(['cat', `/proc/${warm.pid}/smaps_rollup`])).stdout;
  const uss = ['Private_Clean', 'Private_Dirty'].reduce((sum, key) => sum + Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(rollup)?.[1] ?? NaN), 0);
  assert.ok(uss > 0 && uss < 4096, rollup);
  console.log(`# a waiting warm helper: USS ${uss} kB`);
  const children = await sandbox.exec(['cat', `/proc/${warm.pid}/task/${warm.pid}/children`]);
  assert.is(children.stdout.trim(), '');
  // No terminal of the client's exists at all: the agent holds none either.
  const pts = await sandbox.exec(['find', '/dev/pts', '-user', sandbox.client.user]);
  assert.is(pts.stdout.trim(), '', pts.stdout);
  const status = await sandbox.exec([...CLI, 'status', '--json'], { timeoutMs: 30_000 });
  const shown = JSON.parse(status.stdout) as { sessions: { unit: string; warm: boolean; program: string[] | null; cwd: string | null }[] };
  const row = shown.sessions.find((one) => one.unit === warm.unit);
  assert.equal(row && [row.warm, row.program, row.cwd], [true, null, null], status.stdout);
});

test('a SIGSTOPped warm helper: the START runs in a fresh unit, and the stopped one is stopped', async () => {
  const warm = await readyWarm();
  assert.is((await sandbox.exec(['kill', '-STOP', String(warm.pid)])).code, 0);
  const run = await agent.session(['echo', 'fresh']);
  assert.is(run.code, 0, run.stderr);
  assert.is(run.stdout, 'fresh\r\n');
  const text = await journal();
  assert.match(text, `warm unit ${warm.unit} retired: its helper did not answer CLAIM`);
  assert.not.match(text, `session ${warm.unit} started`);
  await until(async () => !(await units()).some((one) => one.unit === warm.unit), 15_000, `${warm.unit} to be gone`);
});

test('a SIGKILLed warm helper: the START runs in a fresh unit', async () => {
  const warm = await readyWarm();
  assert.is((await sandbox.exec(['kill', '-KILL', String(warm.pid)])).code, 0);
  const run = await agent.session(['echo', 'again']);
  assert.is(run.code, 0, run.stderr);
  assert.is(run.stdout, 'again\r\n');
  const text = await journal();
  assert.match(text, `warm unit ${warm.unit} retired`);
  assert.not.match(text, `session ${warm.unit} started`);
});

test('RuntimeMaxSec: a warm unit goes without it, and the session it serves gets it as a wall clock from START', async () => {
  await stopBroker(sandbox);
  await sandbox.install([{ content: `${JSON.stringify(deployConfig(sandbox, { ...CONFIG, session: { warmUnits: 1, properties: { RuntimeMaxSec: 2 } } }))}\n`, to: CONFIG_PATH, mode: 0o644 }]);
  assert.is((await agent.session(['true'])).code, 0, 'the new broker and its first spare');
  const warm = await readyWarm();
  assert.is((await sandbox.systemctl('show', '--property=RuntimeMaxUSec', '--value', warm.unit)).stdout.trim(), 'infinity');
  // Longer than the wall clock, on purpose: the wait of a warm unit must not count.
  await new Promise((resolve) => setTimeout(resolve, 2500));
  const began = Date.now();
  const run = await agent.session(['sh', '-c', 'sleep 1; echo survived; exec sleep 30']);
  const took = Date.now() - began;
  assert.match(run.stdout, 'survived');
  assert.ok(took >= 1900 && took < 15_000, `ended after ${took} ms`);
  const text = await journal();
  assert.match(text, new RegExp(`session ${warm.unit} started for pid \\d+: "sh", \\d+x\\d+, in a warm unit`));
  assert.match(text, `${warm.unit}: its wall clock (RuntimeMaxSec) ran out`);
});

test('a broker killed outright: its warm unit is reaped by the next broker', async () => {
  const warm = await readyWarm();
  // Stopped, its helper cannot see its channel end: only the next broker's orphan scan can end it.
  assert.is((await sandbox.exec(['kill', '-STOP', String(warm.pid)])).code, 0);
  const killed = await sandbox.systemctl('kill', '--signal=SIGKILL', '--kill-who=all', BROKER_UNIT);
  assert.is(killed.code, 0, killed.stderr);
  await until(async () => (await sandbox.systemctl('is-active', BROKER_UNIT)).stdout.trim() !== 'active', 15_000, 'the broker to be gone');
  assert.ok((await units()).some((one) => one.unit === warm.unit), 'the warm unit outlived its broker');
  const run = await agent.session(['echo', 'next']);
  assert.is(run.code, 0, run.stderr);
  await until(async () => !(await units()).some((one) => one.unit === warm.unit), 20_000, `${warm.unit} to be reaped`);
  assert.match(await journal(), `stopping ${warm.unit}, left by an earlier run`);
});

test.run();
