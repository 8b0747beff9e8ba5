// The node-pty face through the real supervisor, side by side with @lydell/node-pty spawning directly: the same
// scenarios (test/compare/pty-probe.ts), each under Node and under Bun, compared on what a caller observes.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn as spawnProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleForNode } from '../support/bundle.ts';
import { bootSandbox, type Sandbox } from '../sandbox/index.ts';
import { INSTALL_DIR, SOCKET_PATH } from '../sandbox/deploy.ts';
import { Agent } from '../support/agent.ts';
import { deploySupervisor } from '../support/supervisor.ts';
import type { ProbeResult } from './pty-probe.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const BUN = join(root, 'node_modules/@oven/bun-linux-x64/bin/bun');
const PROBE_SOURCE = join(root, 'test/compare/pty-probe.ts');
const PROBE_BUNDLE = join(root, '.sandbox', 'compare', 'pty-probe.js');
/** Beside the addon in the sandbox, so the bundle's loader finds it. */
const PROBE = `${INSTALL_DIR}/pty-probe.js`;
const SANDBOX_BUN = `${INSTALL_DIR}/bun`;

let sandbox: Sandbox;
let agent: Agent;
let hostCwd: string;

test.before(async () => {
  await bundleForNode(PROBE_SOURCE, PROBE_BUNDLE);
  // Made before the sandbox boots, so the host check sees it as part of the host.
  hostCwd = mkdtempSync(join(process.env.TMPDIR ?? tmpdir(), 'opencode-pty-compare-'));
  sandbox = await bootSandbox({ name: 'compare' });
  // Every scenario is a connection or more (the limit's 37, twice): more than the default's 120 a minute.
  await deploySupervisor(sandbox, { limits: { maxAdmissionsPerMinute: 1000 } });
  await sandbox.install([
    { from: PROBE_BUNDLE, to: PROBE, mode: 0o644 },
    { from: BUN, to: SANDBOX_BUN, mode: 0o755 },
  ]);
  agent = await Agent.start(sandbox);
});

test.after(async () => {
  await agent?.release().catch(() => {});
  await sandbox?.stop();
  if (hostCwd) rmSync(hostCwd, { recursive: true, force: true });
});

function parse(stdout: string, what: string): ProbeResult {
  try {
    return JSON.parse(stdout.trim().split('\n').pop()!) as ProbeResult;
  } catch {
    throw new Error(`${what} printed no result: ${stdout}`);
  }
}

/** This package through the supervisor, from a child of the agent service (inside its cgroup). */
async function supervisor(runtime: 'node' | 'bun', scenario: string): Promise<ProbeResult> {
  const binary = runtime === 'node' ? '/usr/bin/node' : SANDBOX_BUN;
  const run = await agent.command<{ code: number | null; signal?: string | null; stdout: string; stderr: string }>({ run: [binary, PROBE, 'supervisor', scenario, sandbox.client.home] });
  return parse(run.stdout, `supervisor/${runtime} ${scenario} (exit ${run.code ?? run.signal}: ${run.stderr})`);
}

/** node-pty spawning directly, on the host. */
function nodePty(runtime: 'node' | 'bun', scenario: string): Promise<ProbeResult> {
  const argv = runtime === 'node' ? [process.execPath, '--import', 'tsx', PROBE_SOURCE] : [BUN, PROBE_SOURCE];
  return new Promise((resolve, reject) => {
    const child = spawnProcess(argv[0]!, [...argv.slice(1), 'node-pty', scenario, hostCwd], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('close', () => {
      try {
        resolve(parse(stdout, `node-pty/${runtime} ${scenario} (${stderr})`));
      } catch (error) {
        reject(error);
      }
    });
  });
}

interface Observed {
  supervisorNode: ProbeResult;
  supervisorBun: ProbeResult;
  nodePtyNode: ProbeResult;
  nodePtyBun: ProbeResult;
}

const observed: Record<string, Observed> = {};

async function observe(scenario: string): Promise<Observed> {
  const result = {
    supervisorNode: await supervisor('node', scenario),
    supervisorBun: await supervisor('bun', scenario),
    nodePtyNode: await nodePty('node', scenario),
    nodePtyBun: await nodePty('bun', scenario),
  };
  observed[scenario] = result;
  // Ours: the same on both runtimes, onExit once, never data after it, no error.
  for (const [name, run] of [['Node', result.supervisorNode], ['Bun', result.supervisorBun]] as const) {
    assert.is(run.error, undefined, `supervisor on ${name}: ${run.error}`);
    assert.is(run.exits, 1, `supervisor on ${name}: onExit once`);
    assert.is(run.dataAfterExit, 0, `supervisor on ${name}: no data after onExit`);
  }
  assert.equal(result.supervisorBun, result.supervisorNode, 'the supervisor backend behaves the same on Bun as on Node');
  return result;
}

test('UTF-8 cut across writes arrives whole', async () => {
  const { supervisorNode, nodePtyNode } = await observe('utf8');
  assert.is(supervisorNode.output, '€😀\r\n');
  // node-pty's own output at exit is not asserted: it loses the end under load (recorded below).
  void nodePtyNode;
  assert.equal(supervisorNode.exit, { exitCode: 0, signal: 0 });
});

test('3 MB then exit: every byte before onExit', async () => {
  const { supervisorNode } = await observe('bulk');
  assert.equal(supervisorNode.seen, { a: 3_000_000 });
  assert.equal(supervisorNode.exit, { exitCode: 0, signal: 0 });
});

test('exit 7, kill -9 $$, kill -INT $$: node-pty Node shapes', async () => {
  for (const [scenario, expected] of [['exit7', { exitCode: 7, signal: 0 }], ['kill9', { exitCode: 0, signal: 9 }], ['killint', { exitCode: 0, signal: 2 }]] as const) {
    const { supervisorNode, nodePtyNode } = await observe(scenario);
    assert.equal(supervisorNode.exit, expected, scenario);
    assert.equal(nodePtyNode.exit, expected, `node-pty on Node, ${scenario}`);
  }
});

test('stty size: the initial size and after resize, as node-pty', async () => {
  const { supervisorNode, nodePtyNode } = await observe('size');
  assert.equal(supervisorNode.seen, ['30 100', '40 120']);
  void nodePtyNode;
});

test('pwd -P is the cwd given', async () => {
  const { supervisorNode, nodePtyNode } = await observe('cwd');
  assert.equal(supervisorNode.seen, { same: true });
  assert.equal(nodePtyNode.seen, { same: true });
});

test("env: node-pty passes everything; the supervisor passes the agent's, never systemd's variables", async () => {
  const { supervisorNode, nodePtyNode } = await observe('env');
  assert.equal(nodePtyNode.seen, { PATH: true, LANG: true, AGENT_TOOL_VAR: true, NOTIFY_SOCKET: true, LISTEN_FDS: true });
  assert.equal(supervisorNode.seen, { PATH: true, LANG: true, AGENT_TOOL_VAR: true, NOTIFY_SOCKET: false, LISTEN_FDS: false });
});

test('pause/resume with a fast producer: no byte lost', async () => {
  const { supervisorNode, nodePtyNode } = await observe('pause');
  assert.equal(supervisorNode.seen, { b: 2_000_000 });
  // node-pty on Node lost the last few KB in some runs (1 993 695 of 2 000 000): recorded, not asserted.
  void nodePtyNode;
});

test('kill() of a shell with a background job: ours ends every process, node-pty leaves the job', async () => {
  const { supervisorNode, nodePtyNode } = await observe('background');
  assert.equal(supervisorNode.seen, { jobAlive: false });
  // Version 2's STOPPED says how the program ended: kill() is a hang-up, as node-pty's SIGHUP.
  assert.equal(supervisorNode.exit, { exitCode: 0, signal: 1 });
  assert.equal(nodePtyNode.exit, { exitCode: 0, signal: 1 }, 'node-pty: the same end');
  assert.equal(nodePtyNode.seen, { jobAlive: true }, 'node-pty: the job outlives kill()');
});

test('writes before the session started reach the shell', async () => {
  const { supervisorNode, nodePtyNode } = await observe('early');
  assert.equal(supervisorNode.seen, { echoed: true });
  assert.equal(supervisorNode.exit, { exitCode: 3, signal: 0 });
  // node-pty on Node sometimes loses this output at exit: recorded, not asserted.
  void nodePtyNode;
});

test("pid is the program's: process.kill(pty.pid, 'SIGINT') ends it, as with node-pty", async () => {
  const { supervisorNode, nodePtyNode } = await observe('pid');
  assert.equal(supervisorNode.seen, { pidIsProgram: true });
  assert.equal(supervisorNode.exit, { exitCode: 0, signal: 2 });
  assert.equal(nodePtyNode.seen, { pidIsProgram: true });
  assert.equal(nodePtyNode.exit, { exitCode: 0, signal: 2 });
});

test('the CLI with piped stdin: the program sees end of file and the command ends (cat, sh, python3 -)', async () => {
  const cli = `/usr/bin/node ${INSTALL_DIR}/cli.js run --socket ${SOCKET_PATH} --`;
  for (const [input, program, expected] of [
    // The terminal echoes the input, cat prints it again: a and b twice each.
    ["'a\\nb\\n'", 'cat', /^(?=(?:[^a]*a){2}[^a]*$)(?=(?:[^b]*b){2}[^b]*$)/],
    ["'a\\nb'", 'cat', /^(?=(?:[^a]*a){2}[^a]*$)(?=(?:[^b]*b){2}[^b]*$)/],
    // The script's own text is echoed too: what only the program prints is 42.
    ["'echo $((20+22))\\necho $((1+1))'", 'sh', /42/],
    ["'print(6*7)\\n'", 'python3 -', /42/],
  ] as const) {
    const run = await agent.command<{ code: number; stdout: string; stderr: string }>({ run: ['/bin/sh', '-c', `printf ${input} | ${cli} ${program}`] });
    assert.is(run.code, 0, `${program} <${input}: ${run.stderr} ${JSON.stringify(run.stdout)}`);
    assert.match(run.stdout, expected, `${program} <${input}: ${JSON.stringify(run.stdout)}`);
  }
});

test('a missing program: node-pty exits 1, the session 127 as a shell reports it', async () => {
  const { supervisorNode, nodePtyNode } = await observe('missing');
  assert.equal(supervisorNode.exit, { exitCode: 127, signal: 0 });
  assert.equal(nodePtyNode.exit, { exitCode: 1, signal: 0 });
});

test("kill() is a hang-up: a program's trap … HUP runs and decides the exit, as with node-pty", async () => {
  const { supervisorNode, nodePtyNode } = await observe('huptrap');
  assert.equal(supervisorNode.seen, { trapped: true, beforeGrace: true });
  assert.equal(supervisorNode.exit, { exitCode: 3, signal: 0 });
  assert.equal(nodePtyNode.exit, { exitCode: 3, signal: 0 }, 'node-pty on Node');
  // node-pty on Bun reported { 1, 0 } here (its Bun exit shapes are broken elsewhere too): recorded, not asserted.
});

test('kill() of an interactive bash: it ends at the hang-up (before the grace), { 0, SIGHUP } as with node-pty', async () => {
  const { supervisorNode } = await observe('killbash');
  assert.equal(supervisorNode.seen, { beforeGrace: true });
  assert.equal(supervisorNode.exit, { exitCode: 0, signal: 1 });
  // The reference races in bash itself: node-pty's kill() only signals, and about 1 in 40 times readline
  // catches the SIGHUP, prints its clean-up (bracketed paste off, then on) and goes back to poll for input,
  // so bash never ends. Ours also hangs the terminal up, which ends it either way. The reference's shape is
  // what is compared, so it gets up to three tries; all three hanging means something else changed.
  const tries: ProbeResult[] = [observed.killbash!.nodePtyNode];
  while (tries.at(-1)!.error === 'timed out' && tries.length < 3) tries.push(await nodePty('node', 'killbash'));
  assert.equal(tries.at(-1)!.exit, { exitCode: 0, signal: 1 }, `node-pty on Node, ${tries.length} tries: ${JSON.stringify(tries)}`);
});

test('kill() of a program that does not handle SIGHUP: it dies of it, { 0, SIGHUP } as with node-pty', async () => {
  const { supervisorNode, nodePtyNode } = await observe('killsleep');
  assert.equal(supervisorNode.seen, { beforeGrace: true });
  assert.equal(supervisorNode.exit, { exitCode: 0, signal: 1 });
  assert.equal(nodePtyNode.exit, { exitCode: 0, signal: 1 }, 'node-pty on Node');
});

test('a cwd that does not exist: nothing runs, one reason line through onData, then onExit (node-pty: its chdir line and 1; ours 125)', async () => {
  const { supervisorNode, nodePtyNode } = await observe('missingcwd');
  const { lines, ran } = supervisorNode.seen as { lines: string[]; ran: boolean };
  assert.is(ran, false);
  assert.is(lines.length, 1, JSON.stringify(lines));
  assert.match(lines[0]!, /^opencode-pty: cannot open .*no-such-directory.*ENOENT/);
  assert.equal(supervisorNode.exit, { exitCode: 125, signal: 0 });
  assert.equal(nodePtyNode.seen, { lines: ['chdir(2) failed.: No such file or directory'], ran: false });
  assert.equal(nodePtyNode.exit, { exitCode: 1, signal: 0 });
});

/** The most session units systemd has at once while `during` runs, polled. */
async function mostSessionUnits<T>(during: Promise<T>): Promise<{ result: T; most: number; polls: number }> {
  let most = 0;
  let polls = 0;
  let done = false;
  const settled = during.finally(() => (done = true));
  // Awaited below, after the polls: not an unhandled rejection meanwhile.
  settled.catch(() => undefined);
  while (!done) {
    const listed = await sandbox.systemctl('list-units', '--all', '--plain', '--no-legend', 'opencode-pty-session-*');
    const count = listed.stdout.split('\n').filter((line) => line.includes('opencode-pty-session-')).length;
    most = Math.max(most, count);
    polls += 1;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { result: await settled, most, polls };
}

test('16 means 16: 20 terminals opened and removed whose programs ignore SIGHUP and SIGTERM, then 16 at once all start; the 17th sees "session limit reached (16)"; never more than 16 session units', async () => {
  for (const runtime of ['node', 'bun'] as const) {
    const { result, most, polls } = await mostSessionUnits(supervisor(runtime, 'limit'));
    const seen = result.seen as { cycles: number; together: number; extra: string; startedMs: number; failures: string[] };
    console.log(`# limit on ${runtime}: ${JSON.stringify(seen)}, at most ${most} session units in ${polls} polls`);
    assert.is(result.error, undefined, result.error);
    assert.equal(seen.failures, [], runtime);
    assert.is(seen.cycles, 20, `${runtime}: every create/remove cycle started`);
    assert.is(seen.together, 16, `${runtime}: all 16 at once started`);
    assert.is(seen.extra, 'opencode-pty: session limit reached (16)\r\n', runtime);
    assert.equal(result.exit, { exitCode: 125, signal: 0 }, runtime);
    assert.ok(polls > 10, `${runtime}: polled ${polls} times`);
    assert.ok(most <= 16, `${runtime}: ${most} session units at once`);
  }
});

test('summary of what was seen (for the record)', () => {
  for (const [scenario, runs] of Object.entries(observed)) {
    const line = Object.entries(runs).map(([name, run]) => `${name}=${JSON.stringify({ exit: run.exit, seen: run.seen, error: run.error })}`);
    console.log(`# ${scenario}: ${line.join(' ')}`);
  }
});

test.run();
