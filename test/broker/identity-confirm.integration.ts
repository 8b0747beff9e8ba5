// A provisional yes lets WELCOME go out without a D-Bus round trip: when the broker's snapshot of
// the client service is older than its freshness window (client-service.ts), a peer the snapshot
// puts inside is answered at once, and the fresh look decides before the hand-off. Here the agent
// is stopping (deactivating) while a process of it, left in its cgroup, connects: it is refused
// after WELCOME, and nothing is started for it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, writeFileSync } from 'node:fs';
import { ErrorCode } from '../../src/protocol/index.ts';
import { bootSandbox, type Sandbox } from '../sandbox/index.ts';
import { AGENT_SERVICE, BROKER_UNIT, INSTALL_DIR, SOCKET_PATH } from '../sandbox/deploy.ts';
import { appeared } from '../file-appeared.ts';
import { Agent, deployBroker, PEER, until, type PeerReport } from './harness.ts';

/** ClientService's default freshness window, and a margin past it. */
const FRESHNESS_MS = 1000;

let sandbox: Sandbox;
let agent: Agent;

test.before(async () => {
  sandbox = await bootSandbox({ name: 'broker-identity-confirm' });
  await deployBroker(sandbox, { limits: { idleExitMs: 600_000 } });
  agent = await Agent.start(sandbox);
});

test.after(async () => {
  await sandbox?.systemctl('kill', '--signal=SIGKILL', AGENT_SERVICE);
  await sandbox?.stop();
});

async function agentState(): Promise<string> {
  return (await sandbox.systemctl('show', '--property=ActiveState', '--value', AGENT_SERVICE)).stdout.trim();
}

test('a process left in a stopping agent is refused after WELCOME, before anything starts', async () => {
  const { reports } = await agent.peers(1, 'hello');
  assert.is(reports[0]!.frame, 'welcome', 'the broker has read the agent live');
  const home = sandbox.client.home;
  const cue = `${home}/cue`;
  // Two processes of the agent that outlive its stop's SIGTERM (ignored across exec) and connect on
  // the cue: a raw peer that reports every frame, and the CLI, which sends START after WELCOME.
  const wait = `trap '' TERM HUP; while [ ! -e ${cue} ]; do sleep 0.02; done`;
  await agent.command({ run: ['/bin/sh', '-c', `${wait}; /usr/bin/node ${PEER} ${SOCKET_PATH} 1 hello-idle > ${home}/peer.tmp; mv ${home}/peer.tmp ${home}/peer.json`], background: true });
  await agent.command({
    run: ['/bin/sh', '-c', `${wait}; /usr/bin/node ${INSTALL_DIR}/cli.js run --socket ${SOCKET_PATH} -- /bin/echo started > ${home}/cli.tmp 2>&1; echo "exit $?" >> ${home}/cli.tmp; mv ${home}/cli.tmp ${home}/cli.txt`],
    background: true,
  });
  // The snapshot ages past its window (a time, not an event: there is nothing else to wait for).
  await new Promise((resolve) => setTimeout(resolve, FRESHNESS_MS + 200));
  await sandbox.systemctl('stop', '--no-block', AGENT_SERVICE);
  await until(async () => (await agentState()) === 'deactivating', 10_000, 'the agent stopping', agentState);
  writeFileSync(`${sandbox.root}${cue}`, '');
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
  // One session only (the first peer sent no START, so none at all): no unit was ever asked for.
  assert.not.match(journal, /session opencode-pty-session-\S+ started/);
  const units = await sandbox.systemctl('list-units', '--all', '--plain', '--no-legend', 'opencode-pty-session-*');
  assert.is(units.stdout.trim(), '');
  assert.is((await sandbox.systemctl('is-active', BROKER_UNIT)).stdout.trim(), 'active');
});

test.run();
