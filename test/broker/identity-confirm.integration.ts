// A provisional yes lets WELCOME go out without a D-Bus round trip: when the broker's snapshot of
// the client service is older than its freshness window (client-service.ts), a peer the snapshot
// puts inside is answered at once, and the fresh look decides before the hand-off. Here the agent
// is stopping (deactivating) while processes of it, left in its cgroup, connect with the bus held
// still, so the look cannot come back before their START: they are refused after WELCOME, and
// nothing is started for them.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, writeFileSync } from 'node:fs';
import { ErrorCode } from '../../src/protocol/index.ts';
import { bootSandbox, type Sandbox } from '../sandbox/index.ts';
import { AGENT_SERVICE, BROKER_UNIT, INSTALL_DIR, SOCKET_PATH } from '../sandbox/deploy.ts';
import { appeared } from '../support/file-appeared.ts';
import { Agent, PEER, type PeerReport } from '../support/agent.ts';
import { deploySupervisor, brokerPid, sessionUnits } from '../support/supervisor.ts';
import { until } from '../support/wait.ts';

/** ClientService's default freshness window, and a margin past it. */
const FRESHNESS_MS = 1000;

let sandbox: Sandbox;
let agent: Agent;

test.before(async () => {
  sandbox = await bootSandbox({ name: 'broker-identity-confirm' });
  // A long handshake deadline: the CLI's own start on a loaded machine is not what is tested.
  // The bus held for as long as the clients take: no D-Bus call of the broker's gives up meanwhile.
  await deploySupervisor(sandbox, { limits: { idleExitMs: 600_000, handshakeTimeoutMs: 60_000, operationTimeoutMs: 60_000 } });
  agent = await Agent.start(sandbox);
});

test.after(async () => {
  await sandbox?.systemctl('kill', '--signal=SIGKILL', AGENT_SERVICE);
  await sandbox?.stop();
});

async function agentState(): Promise<string> {
  return (await sandbox.systemctl('show', '--property=ActiveState', '--value', AGENT_SERVICE)).stdout.trim();
}

/** The broker's client connections (on the supervisor's socket), with the bytes it has not read on
 * each: START stays queued there until a worker takes it. */
async function brokerConnections(pid: number): Promise<number[]> {
  const listed = await sandbox.exec(['ss', '-xpH', 'state', 'established', 'src', SOCKET_PATH]);
  assert.is(listed.code, 0, `ss: ${listed.stderr}`);
  const lines = listed.stdout.split('\n');
  return lines.filter((line) => line.includes(`pid=${pid},`)).map((line) => Number(line.trim().split(/\s+/)[1] ?? 0));
}

test('processes left in a stopping agent are refused after WELCOME, before anything starts', async () => {
  const { reports } = await agent.peers(1, 'hello');
  assert.is(reports[0]!.frame, 'welcome', 'the broker has read the agent live');
  const home = sandbox.client.home;
  // Two processes of the agent that outlive its stop's SIGTERM (ignored across exec), each connecting
  // on its own cue: a raw peer that reports every frame, and the CLI, which sends START after WELCOME.
  const wait = (cue: string) => `trap '' TERM HUP; while [ ! -e ${home}/${cue} ]; do sleep 0.02; done`;
  await agent.command({ run: ['/bin/sh', '-c', `${wait('cue-peer')}; /usr/bin/node ${PEER} ${SOCKET_PATH} 1 hello-idle > ${home}/peer.tmp; mv ${home}/peer.tmp ${home}/peer.json`], background: true });
  await agent.command({
    run: ['/bin/sh', '-c', `${wait('cue-cli')}; /usr/bin/node ${INSTALL_DIR}/cli.js run --socket ${SOCKET_PATH} -- /bin/echo started > ${home}/cli.tmp 2>&1; echo "exit $?" >> ${home}/cli.tmp; mv ${home}/cli.tmp ${home}/cli.txt`],
    background: true,
  });
  // The snapshot ages past its window (a time, not an event: there is nothing else to wait for).
  await new Promise((resolve) => setTimeout(resolve, FRESHNESS_MS + 200));
  await sandbox.systemctl('stop', '--no-block', AGENT_SERVICE);
  await until(async () => (await agentState()) === 'deactivating', 10_000, 'the agent stopping', agentState);
  // The bus held still (systemctl reaches PID 1 on its own socket): the fresh look cannot come back,
  // so whatever the broker does meanwhile it does on the provisional yes alone.
  const broker = await brokerPid(sandbox);
  const signalBus = (signal: string) => sandbox.systemctl('kill', '--kill-whom=main', `--signal=${signal}`, 'dbus.service');
  try {
    assert.is((await signalBus('SIGSTOP')).code, 0, 'the bus held');
    writeFileSync(`${sandbox.root}${home}/cue-peer`, '');
    writeFileSync(`${sandbox.root}${home}/cue-cli`, '');
    // Both are connected, and one connection (the CLI's) holds START and its working directory's fd:
    // WELCOME came without the look.
    const both = async () => {
      const unread = await brokerConnections(broker);
      return unread.length === 2 && unread.some((bytes) => bytes > 0);
    };
    await until(both, 20_000, 'both connected, START queued at the broker', async () => JSON.stringify(await brokerConnections(broker)));
  } finally {
    await signalBus('SIGCONT');
  }
  await appeared(`${sandbox.root}${home}/peer.json`, 20_000);
  await appeared(`${sandbox.root}${home}/cli.txt`, 20_000);

  const [peer] = readFileSync(`${sandbox.root}${home}/peer.json`, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as PeerReport);
  assert.equal(peer!.frames, ['welcome', 'error'], 'WELCOME did not wait for the fresh look; its ERROR came after');
  assert.is(peer!.code, ErrorCode.AUTHENTICATION);
  const cli = readFileSync(`${sandbox.root}${home}/cli.txt`, 'utf8');
  assert.not.match(cli, /^started$/m, 'the program never ran');
  assert.match(cli, /authentication failed/);
  assert.not.match(cli, /exit 0/);
  const journal = await sandbox.journal();
  assert.match(journal, /not inside opencode-pty-agent\.service/);
  // No session at all (the first peer sent no START): no unit was ever asked for.
  assert.not.match(journal, /session opencode-pty-session-\S+ started/);
  // A spare's idle warm unit (session.warmUnits) is no session: sessionUnits leaves it out.
  assert.equal(await sessionUnits(sandbox), []);
  assert.is((await sandbox.systemctl('is-active', BROKER_UNIT)).stdout.trim(), 'active');
  assert.equal(await brokerConnections(broker), [], 'both connections closed, what the CLI queued read away');
});

test.run();
