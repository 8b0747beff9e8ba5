// Processes of the client account outside the agent unit cannot lock the agent out: programs in
// sessions cannot reach the socket at all (its group), and any other outsider is refused at accept
// before it costs an admission slot or a rate token.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ErrorCode } from '../../src/protocol/index.ts';
import { SOCKET_GROUP, type Sandbox } from '../sandbox/index.ts';
import { BROKER_UNIT, SOCKET_PATH } from '../sandbox/deploy.ts';
import { Agent, PEER } from '../support/agent.ts';
import { bootSupervisor, stopAgent, stopBroker, brokerProperty } from '../support/supervisor.ts';

const FLOOD_SECONDS = 10;

let sandbox: Sandbox;
let agent: Agent;

test.before(async () => {
  ({ sandbox, agent: agent } = await bootSupervisor('broker-isolation', { limits: { idleExitMs: 600_000 } }));
});

test.after.each(async () => {
  // A fresh broker per test: admission counts and the minute's window start empty.
  await stopBroker(sandbox);
});

test.after(async () => {
  await agent?.release();
  await sandbox?.stop();
});

/** CPU seconds (user + system) the broker process has used so far. */
async function brokerCpuSeconds(): Promise<number> {
  const pid = await brokerProperty(sandbox, 'MainPID');
  const stat = (await sandbox.exec(['cat', `/proc/${pid}/stat`])).stdout;
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

test('a program inside a session cannot connect to the socket, whatever path it takes', async () => {
  const probe = [
    '/usr/bin/node',
    '-e',
    'for (const path of process.argv.slice(1)) require("net").connect(path).on("connect", () => console.log("CONNECTED")).on("error", (e) => console.log(e.code))',
    SOCKET_PATH,
    `/proc/${agent.mainPid}/root${SOCKET_PATH}`,
  ];
  const run = await agent.session(probe);
  assert.is(run.code, 0, run.stderr);
  const outcomes = run.stdout.trim().split(/\r?\n/).sort();
  // The socket's group is the agent unit's alone, so the kernel refuses the connect by its own
  // path and through the agent's root alike (no InaccessiblePaths= in the default profile).
  assert.equal(outcomes, ['EACCES', 'EACCES'], run.stdout);
});

test(`a ${FLOOD_SECONDS} s connection flood from outside the agent unit costs the agent no refusal`, async () => {
  // A same-account process outside the agent unit that has the socket's group (as a second,
  // misconfigured service of the account would): the strongest outsider there can be.
  await agent.peers(1, 'junk'); // activates the broker, whose CPU is then measured
  const cpuBefore = await brokerCpuSeconds();
  const flood = sandbox.exec(['/usr/bin/node', PEER, SOCKET_PATH, 'flood', String(FLOOD_SECONDS), '4'], {
    as: 'client',
    groups: [SOCKET_GROUP.gid],
    timeoutMs: (FLOOD_SECONDS + 30) * 1000,
  });
  let floodDone = false;
  void flood.finally(() => (floodDone = true));
  let mainStarts = 0;
  let childStarts = 0;
  const failures: string[] = [];
  // The MainPID's connections pass identity and admission and are then refused for a frame of
  // unknown type, so each is decided at once and holds no session slot (a WELCOME would take a worker
  // each, and the 16 slots, not admission, would then decide under load).
  // Paced so both loops together stay under the minute's 120 admissions (ordinary slots are free,
  // so the MainPID's admissions count against the rate too): only the flood may be refused.
  const pace = () => new Promise((resolve) => setTimeout(resolve, 200));
  const mainLoop = (async () => {
    while (!floodDone) {
      await pace();
      const { reports } = await agent.peers(1, 'junk');
      if (reports[0]!.code === ErrorCode.PROTOCOL) mainStarts += 1;
      else failures.push(`MainPID: ${JSON.stringify(reports[0])}`);
    }
  })();
  const childLoop = (async () => {
    while (!floodDone) {
      await pace();
      const run = await agent.session(['true']);
      if (run.code === 0) childStarts += 1;
      else failures.push(`child: ${run.code} ${run.stderr}`);
    }
  })();
  const result = await flood;
  await Promise.all([mainLoop, childLoop]);
  const cpu = (await brokerCpuSeconds()) - cpuBefore;
  assert.is(result.code, 0, result.stderr);
  const counts = JSON.parse(result.stdout) as Record<string, number>;
  const refusedAtAccept = counts[`error-${ErrorCode.AUTHENTICATION}`] ?? 0;
  const total = Object.values(counts).reduce((sum, n) => sum + n, 0);
  console.log(
    `# flood ${FLOOD_SECONDS} s: ${total} connections (${JSON.stringify(counts)}); agent MainPID ${mainStarts} admissions and child ${childStarts} sessions, ` +
      `${failures.length} refused; broker CPU ${cpu.toFixed(2)} s`,
  );
  assert.equal(failures, []);
  assert.ok(mainStarts > 0 && childStarts > 0, 'the agent started sessions during the flood');
  assert.ok(refusedAtAccept > 100, `the flood reached the broker (${JSON.stringify(counts)})`);
  assert.is(counts[`error-${ErrorCode.ADMISSION}`] ?? 0, 0, 'no outsider ever took an admission slot');
  // Refusals are logged once per peer per episode, not once per connection.
  const journal = await sandbox.journal(BROKER_UNIT);
  const lines = journal.split('\n').filter((line) => line.includes('not inside'));
  assert.ok(lines.length >= 1 && lines.length <= 2, `${lines.length} refusal lines for ${refusedAtAccept} refusals:\n${lines.slice(0, 5).join('\n')}`);
});

/** Stops the agent service and starts it again: a new invocation and MainPID, the same cgroup path. */
async function restartAgent(): Promise<void> {
  await agent.release();
  await stopAgent(sandbox);
  // A fresh control socket name each start (support/agent.ts): the old one's file cannot be taken for the new.
  agent = await Agent.start(sandbox);
}

test('the agent restarted 20 times: each new MainPID, and a child of it, starts at once with no refusal', async () => {
  const refusals: string[] = [];
  for (let i = 0; i < 20; i += 1) {
    await restartAgent();
    const { reports } = await agent.peers(1, 'hello');
    if (reports[0]!.frame !== 'welcome') refusals.push(`restart ${i}, MainPID ${agent.mainPid}: ${JSON.stringify(reports[0])}`);
    const [child] = await agent.childPeers(1, 'junk');
    if (child!.code !== ErrorCode.PROTOCOL) refusals.push(`restart ${i}, child: ${JSON.stringify(child)}`);
  }
  assert.equal(refusals, []);
});

test('with the admissions of the minute used up, a restarted agent MainPID gets the reserved slot at once', async () => {
  const used = await agent.childPeers(130, 'junk');
  assert.ok(used.some((report) => report.code === ErrorCode.ADMISSION), 'the rate is used up');
  for (let i = 0; i < 3; i += 1) {
    await restartAgent();
    const { reports } = await agent.peers(1, 'hello');
    assert.is(reports[0]!.frame, 'welcome', `restart ${i}: ${JSON.stringify(reports[0])}`);
    const [child] = await agent.childPeers(1, 'silent');
    assert.is(child!.code, ErrorCode.ADMISSION, 'other processes of the agent still wait for the rate');
  }
});

test.run();
