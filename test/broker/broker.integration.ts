// The accept-broker against real systemd: socket activation, identity, admission, limits, deadlines.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ErrorCode } from '../../src/protocol/index.ts';
import { SOCKET_GROUP, type Sandbox } from '../sandbox/index.ts';
import { agentRun, BROKER_UNIT as BROKER, CONFIG_PATH, deployConfig, INSTALL_DIR, SOCKET_PATH } from '../sandbox/deploy.ts';
import { Agent } from '../support/agent.ts';
import { bootSupervisor, peersAs, stopBroker, brokerProperty, sessionUnits } from '../support/supervisor.ts';
import { until } from '../support/wait.ts';

/** A wrong account: AUTHENTICATION (retrying cannot help), with the earlier supervisor's text. */
const WRONG_ACCOUNT = { frame: 'error', code: ErrorCode.AUTHENTICATION, message: 'authentication failed: not the client account' };

let sandbox: Sandbox;
let agent: Agent;

test.before(async () => {
  ({ sandbox, agent: agent } = await bootSupervisor('broker', { limits: { idleExitMs: 600_000 } }));
});

test.after.each(async () => {
  await agent.release();
  // A fresh broker per test: admission counts and rate windows start empty.
  await stopBroker(sandbox);
});

test.after(async () => {
  await sandbox?.stop();
});

test('socket activation: a session through the real supervisor as the agent service', async () => {
  assert.is(await brokerProperty(sandbox, 'ActiveState'), 'inactive');
  const run = await sandbox.exec(agentRun(sandbox, ['sh', '-c', 'echo hi; id -u; exit 3'], { unit: 'opencode-pty-agent-run.service' }), { timeoutMs: 30_000 });
  // This unit is not the configured agent service, so the supervisor must refuse it...
  assert.is(run.code, 125, run.stderr);
  assert.match(run.stderr, 'authentication failed');
  assert.match(run.stderr, "not inside the agent's service unit", 'the reason, in words the peer may read');
  // ...while a child of the agent service gets its session.
  const session = await agent.session(['sh', '-c', 'echo hi; id -u; exit 3']);
  assert.is(session.code, 3, session.stderr);
  assert.is(session.stdout, `hi\r\n${sandbox.client.uid}\r\n`);
  assert.is(await brokerProperty(sandbox, 'ActiveState'), 'active');
  // No worker holds the listening socket (the broker's fd 3, close-on-exec).
  const brokerPid = await brokerProperty(sandbox, 'MainPID');
  const listening = (await sandbox.exec(['readlink', `/proc/${brokerPid}/fd/3`])).stdout.trim();
  assert.match(listening, /^socket:\[\d+\]$/);
  const workers = (await sandbox.exec(['pgrep', '-f', '/opt/opencode-pty/worker.cjs'])).stdout.trim().split('\n').filter(Boolean);
  assert.ok(workers.length >= 1, 'a warm spare is running');
  for (const pid of workers) {
    const fds = await sandbox.exec(['sh', '-c', `for f in /proc/${pid}/fd/*; do readlink "$f"; done`]);
    assert.not.ok(fds.stdout.split('\n').includes(listening), `worker ${pid} holds the listening socket`);
  }
  // The worker exits just after its client saw EXIT; the broker then frees the slot.
  await until(async () => (await brokerProperty(sandbox, 'StatusText')) === '0 sessions, 0 handshakes', 5000, 'the slot to be freed');
  assert.equal(await sessionUnits(sandbox), []);
});

test("the listening socket's accept queue is the unit's Backlog=, 4096 (a full queue is the agent's EAGAIN)", async () => {
  // ss(8): for a listening socket Send-Q is the backlog.
  const listening = await sandbox.exec(['ss', '-xlH', 'src', SOCKET_PATH]);
  const fields = listening.stdout.trim().split(/\s+/);
  assert.is(fields[4], SOCKET_PATH, listening.stdout);
  assert.is(fields[3], '4096', listening.stdout);
});

test('wrong uid and wrong gid are refused with AUTHENTICATION before anything is read', async () => {
  // Both can reach the 0660 socket through its group, as a member of it could.
  const socketGroup = [SOCKET_GROUP.gid];
  const [other] = await peersAs(sandbox, { as: 'other', groups: socketGroup }, 1, 'silent');
  assert.equal({ frame: other!.frame, code: other!.code, message: other!.message }, WRONG_ACCOUNT);
  const [wrongGid] = await peersAs(sandbox, { uid: sandbox.client.uid, gid: sandbox.other.gid, groups: socketGroup }, 1, 'silent');
  assert.equal({ frame: wrongGid!.frame, code: wrongGid!.code, message: wrongGid!.message }, WRONG_ACCOUNT);
  // The right account inside the agent unit is admitted: it is not refused at once but waits for its HELLO.
  const [right] = await agent.childPeers(1, 'silent');
  assert.equal({ frame: right!.frame, code: right!.code }, { frame: 'error', code: ErrorCode.HANDSHAKE_TIMEOUT });
});

test('the right account outside the agent service is refused at accept, before it costs a slot', async () => {
  // With the socket's group (a misconfigured second service could have it) it reaches the socket...
  // A silent peer reads why (a peer writing HELLO at that moment may see the close reset first).
  const [report] = await peersAs(sandbox, { as: 'client', groups: [SOCKET_GROUP.gid] }, 1, 'silent');
  assert.equal({ frame: report!.frame, code: report!.code, message: report!.message }, { frame: 'error', code: ErrorCode.AUTHENTICATION, message: "authentication failed: not inside the agent's service unit" });
  assert.ok(report!.ms < 4000, `refused at once, not at the handshake deadline (${report!.ms} ms)`);
  const [hello] = await peersAs(sandbox, { as: 'client', groups: [SOCKET_GROUP.gid] }, 1, 'hello');
  assert.ok(hello!.frame !== 'welcome' && hello!.closed !== false, JSON.stringify(hello));
  // ...and without it (the account as sessions run it) the kernel refuses the connect itself.
  const [plain] = await peersAs(sandbox, { as: 'client' }, 1, 'silent');
  assert.is(plain!.error, 'EACCES');
  // The command there says what to do: the socket's group, the agent's unit, a restart after install.
  const cli = await sandbox.exec(['/usr/bin/node', `${INSTALL_DIR}/cli.js`, 'run', '--socket', SOCKET_PATH, '--', 'true'], { as: 'client' });
  assert.is(cli.code, 125, cli.stderr);
  assert.match(cli.stderr, 'EACCES');
  assert.match(cli.stderr, "socket's group");
  assert.match(cli.stderr, 'restart');
});

test('a silent peer and a peer sending one byte a second are cut at the handshake deadline', async () => {
  const [silent, drip] = await Promise.all([agent.childPeers(1, 'silent'), agent.childPeers(1, 'drip')]);
  for (const [report] of [silent, drip]) {
    assert.is(report!.frame, 'error');
    assert.is(report!.code, ErrorCode.HANDSHAKE_TIMEOUT);
    assert.ok(report!.ms >= 4900, `cut after ${report!.ms} ms`);
  }
});

/** The next broker (each test gets a fresh one) reads this config. */
async function configure(overrides: Record<string, unknown>): Promise<void> {
  await sandbox.install([{ content: JSON.stringify(deployConfig(sandbox, overrides)), to: CONFIG_PATH }]);
}

test('an authenticated peer that never sends START is cut by its worker at the same deadline', async () => {
  const { reports } = await agent.peers(1, 'hello-idle');
  const report = reports[0]!;
  assert.equal(report.frames, ['welcome', 'error']);
  assert.is(report.code, ErrorCode.HANDSHAKE_TIMEOUT);
  assert.ok(report.ms >= 4900, `cut after ${report.ms} ms`);
  await until(async () => (await brokerProperty(sandbox, 'StatusText')) === '0 sessions, 0 handshakes', 5000, 'the slot to be freed');
  assert.equal(await sessionUnits(sandbox), []);
});

test('32 idle connections fill the ordinary slots; the real MainPID still gets in, a 33rd peer does not', async () => {
  // Long enough a deadline that the 32 idle connections are all still held when the others come.
  await configure({ limits: { idleExitMs: 600_000, handshakeTimeoutMs: 30_000 } });
  const idle = await agent.command<{ pid: number }>({ run: ['/usr/bin/node', '/opt/opencode-pty/test/peer.mjs', SOCKET_PATH, '32', 'silent', 'hold'], background: true });
  assert.ok(idle.pid > 0);
  await until(async () => (await brokerProperty(sandbox, 'StatusText')).includes('32 handshakes'), 20_000, '32 held handshakes', async () =>
    `status ${await brokerProperty(sandbox, 'StatusText')}\n${await sandbox.journal()}`);
  const [another] = await agent.childPeers(1, 'silent');
  assert.equal({ frame: another!.frame, code: another!.code }, { frame: 'error', code: ErrorCode.ADMISSION });
  const { reports } = await agent.peers(1, 'hello');
  assert.equal({ frame: reports[0]!.frame, version: (reports[0] as { version?: number }).version }, { frame: 'welcome', version: 1 });
  await configure({ limits: { idleExitMs: 600_000 } });
});

test('the 121st admission within a minute is refused', async () => {
  const reports = await agent.childPeers(120, 'junk');
  // Each of the first 120 was admitted, then refused for its frame of unknown type.
  assert.ok(reports.every((report) => report.code === ErrorCode.PROTOCOL), JSON.stringify(reports.find((r) => r.code !== ErrorCode.PROTOCOL)));
  // The 121st is refused on accept; a silent peer (sending nothing that could race the close) reads why.
  const [last] = await agent.childPeers(1, 'silent');
  assert.equal({ frame: last!.frame, code: last!.code }, { frame: 'error', code: ErrorCode.ADMISSION });
  // The MainPID still gets in, past the rate, through its reserved slot.
  const { reports: main } = await agent.peers(1, 'hello');
  assert.is(main[0]!.frame, 'welcome');
});

test('the 17th session is refused; SIGTERM with 16 live sessions leaves no session unit', async () => {
  for (let i = 0; i < 16; i += 1) await agent.session(['sleep', '1000'], true);
  await until(async () => (await sessionUnits(sandbox)).length === 16, 30_000, '16 session units');
  const refused = await agent.session(['true']);
  assert.is(refused.code, 125);
  assert.match(refused.stderr, 'session limit reached');
  await stopBroker(sandbox);
  assert.equal(await sessionUnits(sandbox), []);
});

test('a worker killed mid-session leaves no unit', async () => {
  await agent.session(['sleep', '1000'], true);
  await until(async () => (await sessionUnits(sandbox)).length === 1, 10_000, 'one session unit');
  const workers = await sandbox.exec(['pgrep', '-f', '/opt/opencode-pty/worker.cjs']);
  // The busy worker is the one whose session exists: kill every worker; the spare is replaced.
  for (const pid of workers.stdout.trim().split('\n').filter(Boolean)) await sandbox.exec(['kill', '-KILL', pid]);
  await until(async () => (await sessionUnits(sandbox)).length === 0, 10_000, 'the session unit to be stopped');
  assert.is(await brokerProperty(sandbox, 'ActiveState'), 'active');
});

test('SIGKILL of the whole broker unit: the next activation stops what its sessions left behind', async () => {
  await agent.session(['sh', '-c', 'trap "" HUP TERM; while :; do sleep 1; done'], true);
  await until(async () => (await sessionUnits(sandbox)).length === 1, 10_000, 'one session unit');
  await sandbox.systemctl('kill', '--signal=SIGKILL', BROKER);
  await until(async () => (await brokerProperty(sandbox, 'ActiveState')) !== 'active', 10_000, 'the broker to die');
  const session = await agent.session(['true']);
  assert.is(session.code, 0, session.stderr);
  await until(async () => (await sessionUnits(sandbox)).length === 0, 30_000, 'no session unit');
});

test('16 orphans that ignore SIGTERM: the next broker answers at once, stops them all together, SIGKILL after their stop timeout', async () => {
  // Units of an earlier run whose programs ignore SIGHUP and SIGTERM, with systemd's default 90 s
  // stop timeout: one at a time that was minutes; together and bounded it is one stop timeout.
  const orphans = Array.from({ length: 16 }, (_, i) => `opencode-pty-session-${i.toString(16).padStart(2, '0')}${'0'.repeat(30)}.service`);
  for (const unit of orphans) {
    const run = await sandbox.exec(['systemd-run', '--quiet', `--unit=${unit}`, `--uid=${sandbox.client.user}`, '-p', 'TimeoutStopSec=90', '--', 'sh', '-c', 'trap "" HUP TERM; while :; do sleep 1; done']);
    assert.is(run.code, 0, run.stderr);
  }
  assert.is((await sessionUnits(sandbox)).length, 16);
  // Every slot is held by an orphan: the first connection is told so at once, not after the cleanup.
  const refused = await agent.session(['true']);
  assert.is(refused.code, 125, refused.stderr);
  assert.match(refused.stderr, 'session limit reached');
  assert.is((await sessionUnits(sandbox)).length, 16, 'answered while every orphan was still there');
  assert.match(await brokerProperty(sandbox, 'StatusText'), '16 orphans stopping');
  await until(async () => (await sessionUnits(sandbox)).length === 0, 60_000, 'the orphans to be stopped');
  const journal = await sandbox.journal(BROKER);
  for (const unit of orphans) {
    assert.match(journal, `stopping ${unit}, left by an earlier run`);
    assert.match(journal, `cannot stop ${unit}:`);
  }
  const session = await agent.session(['true']);
  assert.is(session.code, 0, session.stderr);
  await until(async () => (await sessionUnits(sandbox)).length === 0, 10_000, 'no session unit');
});

test.run();
