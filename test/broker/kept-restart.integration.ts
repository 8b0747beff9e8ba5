// Kept sessions across the supervisor's restarts (issue 30) against the real systemd: root's recorded
// deadline holds after an adoption (counted from the recorded detach; from the adoption for a session
// that was attached when its supervisor went); a session without its record is reaped, saying why; and
// `systemctl restart` of the broker, a stop of the socket and the broker then a start, a D-Bus restart
// and a daemon-reload leave kept sessions running and attachable, nothing lost (sha256).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHash } from 'node:crypto';
import type { Sandbox } from '../sandbox/index.ts';
import type { Agent } from '../support/agent.ts';
import { bootSupervisor, brokerPid, brokerProperty, killSupervisor, sessionUnits } from '../support/supervisor.ts';
import { until } from '../support/wait.ts';
import { BROKER_UNIT, SOCKET_UNIT } from '../sandbox/deploy.ts';

let sandbox: Sandbox;
let agent: Agent;

test.before(async () => {
  // A short idle exit: the broker must not take it while a kept session exists.
  ({ sandbox, agent } = await bootSupervisor('kept-restart', { limits: { maxSessions: 6, maxKept: 4, idleExitMs: 1500 } }));
});

test.after(async () => {
  await sandbox?.stop();
});

const sha = (text: string) => createHash('sha256').update(text).digest('hex');
const seq = (n: number) => Array.from({ length: n }, (_, i) => `${i + 1}\r\n`).join('');
const paced = (n: number, steps: number, pauseS: number) =>
  `k=0; while [ $k -lt ${steps} ]; do seq $((k*${n / steps}+1)) $(((k+1)*${n / steps})); k=$((k+1)); sleep ${pauseS}; done; read line; exit 4`;
const keptFiles = async () => (await sandbox.exec(['sh', '-c', 'ls -A /run/opencode-pty-kept 2>/dev/null'])).stdout.split('\n').filter(Boolean);
const journalHas = async (text: string) => (await sandbox.journal()).includes(text);


type Listed = { id: number; state: string; deadlineMs: number | null };
const listed = async (id: number) => ((await agent.keep({ op: 'list' })).list as Listed[]).find((one) => one.id === id);

test("root's deadline holds across a crash: counted from the recorded detach, not from the adoption", async () => {
  const keepMs = 8000;
  const started = await agent.keep({ op: 'start', name: 'k', argv: ['sleep', '600'], keepMs, read: {} });
  assert.is(started.error, undefined, started.message);
  await agent.keep({ op: 'detach', name: 'k' });
  const detachedAt = Date.now();
  await until(async () => (await listed(started.id!))?.state === 'detached', 5000, 'detached');
  await killSupervisor(sandbox);
  // Adopted well after the detach: a deadline counted from the adoption would come 3 s too late.
  await new Promise((resolve) => setTimeout(resolve, 3000));
  const entry = await listed(started.id!);
  assert.ok(entry, 'listed again once adopted');
  // LIST's deadline is when it passes (Unix ms): the recorded detach's, within the time the detach took to be seen.
  assert.ok(entry!.deadlineMs !== null && Math.abs(entry!.deadlineMs - (detachedAt + keepMs)) < 1000, `the recorded deadline: ${entry!.deadlineMs! - detachedAt} ms after the detach`);
  await until(async () => (await sessionUnits(sandbox)).length === 0, 15_000, 'the unit stopped at its deadline');
  const endedAfter = Date.now() - detachedAt;
  assert.ok(endedAfter >= keepMs - 500 && endedAfter < keepMs + 2500, `stopped ${endedAfter} ms after the detach (keep ${keepMs} ms)`);
  await until(async () => (await keptFiles()).length === 0, 5000, 'its socket and record gone');
});

test('a crash with a detached kept session and no connection after it: systemd starts the next broker, which ends the session at its deadline', async () => {
  const keepMs = 4000;
  const restarts = Number(await brokerProperty(sandbox, 'NRestarts'));
  const started = await agent.keep({ op: 'start', name: 'w', argv: ['sleep', '600'], keepMs, read: {} });
  assert.is(started.error, undefined, started.message);
  await agent.keep({ op: 'detach', name: 'w' });
  const detachedAt = Date.now();
  await until(async () => (await listed(started.id!))?.state === 'detached', 5000, 'detached');
  await killSupervisor(sandbox);
  // Nothing connects from here on: only the unit's own restart can bring the deadline back.
  await until(async () => (await sessionUnits(sandbox)).length === 0, keepMs + 15_000, 'the unit stopped at its deadline, with no connection', async () => (await sandbox.journal()).slice(-5000));
  const endedAfter = Date.now() - detachedAt;
  assert.ok(endedAfter >= keepMs - 500, `stopped ${endedAfter} ms after the detach, not before its keep (${keepMs} ms)`);
  assert.ok(Number(await brokerProperty(sandbox, 'NRestarts')) > restarts, 'started again by systemd, not by a connection');
  await until(async () => (await keptFiles()).length === 0, 5000, 'its socket and record gone');
});

test('a session attached when its supervisor went is counted as detached from its adoption', async () => {
  const keepMs = 3000;
  const started = await agent.keep({ op: 'start', name: 'a', argv: ['sleep', '600'], keepMs, read: {} });
  // Attached for longer than its keep: a deadline counted from its start would end it at its adoption.
  await new Promise((resolve) => setTimeout(resolve, keepMs + 500));
  const killedAt = Date.now();
  await killSupervisor(sandbox);
  await agent.keep({ op: 'read', name: 'a', read: { untilEnd: true, ms: 10_000 } });
  // systemd starts the next broker by itself (Restart=on-failure), which adopts it at once; root never
  // recorded it detached, so its whole keep runs from that adoption, after the kill.
  const entry = await listed(started.id!);
  assert.ok(entry && entry.deadlineMs !== null && entry.deadlineMs >= killedAt + keepMs, `its whole keep from the adoption: ${JSON.stringify(entry)}`);
  await until(async () => (await sessionUnits(sandbox)).length === 0, 15_000, 'the unit stopped at its deadline');
  assert.ok(Date.now() - killedAt >= keepMs - 500, 'not before keepMs after the adoption');
  await until(async () => (await keptFiles()).length === 0, 5000, 'its socket and record gone');
});

test('a kept session whose record is lost is reaped as an orphan, with a line saying why', async () => {
  const started = await agent.keep({ op: 'start', name: 'l', argv: ['sleep', '600'], keepMs: 60_000, read: {} });
  await agent.keep({ op: 'detach', name: 'l' });
  await killSupervisor(sandbox);
  await sandbox.exec(['rm', `/run/opencode-pty-kept/${started.id}.json`]);
  assert.is(await listed(started.id!), undefined, 'not adopted');
  await until(async () => (await sessionUnits(sandbox)).length === 0, 15_000, 'the unit reaped');
  await until(async () => (await keptFiles()).length === 0, 5000, 'its socket removed');
  assert.ok(await journalHas('not adopted, it has no record'), 'the journal says why');
});

test('no idle exit while only a detached kept session is left: the broker holds its deadline; it exits idle once the session is gone', async () => {
  const started = await agent.keep({ op: 'start', name: 'i', argv: ['sleep', '600'], keepMs: 60_000, read: {} });
  await agent.keep({ op: 'detach', name: 'i' });
  const pid = await brokerPid(sandbox);
  assert.ok(pid > 0);
  // Twice the idle time with nothing attached: no event to wait for, the absence of the exit is the point.
  await new Promise((resolve) => setTimeout(resolve, 3000));
  assert.is(await brokerPid(sandbox), pid, 'the same broker, still up');
  const entry = await listed(started.id!);
  assert.ok(entry && entry.state === 'detached' && entry.deadlineMs !== null, JSON.stringify(entry));
  await agent.keep({ op: 'stop-session', id: started.id! });
  await until(async () => (await brokerPid(sandbox)) === 0, 10_000, 'the idle exit once nothing is kept');
});

/** A kept session writing throughout `disrupt`, attached again afterwards from the last offset seen: sha256 of both halves. */
async function survives(name: string, disrupt: () => Promise<void>): Promise<void> {
  const n = 20_000;
  const expected = seq(n);
  const started = await agent.keep({ op: 'start', name, argv: ['sh', '-c', paced(n, 200, 0.02)], keepMs: 60_000, read: { bytes: 1000 } });
  assert.is(started.error, undefined, started.message);
  await disrupt();
  // Attached through it, or let go by a helper whose worker went: either way the bytes so far are a prefix.
  const before = await agent.keep({ op: 'detach', name });
  assert.is(before.sha256, sha(expected.slice(0, before.bytes!)), `${name}: a prefix before`);
  const after = await agent.keep({ op: 'attach', name: `${name}-2`, id: started.id!, from: before.offset, read: { bytes: expected.length - before.offset! } });
  assert.is(after.error, undefined, after.message);
  assert.is(after.sha256, sha(expected.slice(before.offset!)), `${name}: the rest after`);
  await agent.keep({ op: 'stop-session', id: started.id! });
  await until(async () => (await sessionUnits(sandbox)).length === 0 && (await keptFiles()).length === 0, 15_000, `${name}: gone after STOP_SESSION`);
}

test('systemctl restart of the broker: kept sessions run on and are attached again', async () => {
  await survives('r', async () => {
    const before = await brokerPid(sandbox);
    const restarted = await sandbox.systemctl('restart', BROKER_UNIT);
    assert.is(restarted.code, 0, restarted.stderr);
    assert.not.equal(await brokerPid(sandbox), before);
  });
});

test('systemctl stop of the socket and the broker, then start: kept sessions run on', async () => {
  await survives('s', async () => {
    assert.is((await sandbox.systemctl('stop', SOCKET_UNIT, BROKER_UNIT)).code, 0);
    assert.is((await sessionUnits(sandbox)).length, 1, 'the kept session runs with no supervisor');
    assert.is((await sandbox.systemctl('start', SOCKET_UNIT)).code, 0);
  });
});

test('a D-Bus restart and a daemon-reload: kept sessions run on', async () => {
  await survives('d', async () => {
    assert.is((await sandbox.systemctl('restart', 'dbus.service')).code, 0);
    assert.is((await sandbox.systemctl('daemon-reload')).code, 0);
  });
});

test('an install of another build between detach and attach: its broker adopts the session the previous build started, whose helper runs on', async () => {
  const next = '/opt/opencode-pty-next';
  await survives('u', async () => {
    // As an upgrade lays out a new version beside the old one and points the unit at it; the running
    // session's helper stays the old build's binary. A busy broker is not restarted by an install: the operator's restart here.
    const copied = await sandbox.exec(['sh', '-c', `rm -rf ${next} && cp -a /opt/opencode-pty ${next} && printf '[Service]\nExecStart=\nExecStart=/usr/bin/node ${next}/broker.cjs\nEnvironment=OPENCODE_PTY_CONFIG=/opt/opencode-pty/config.json\n' >/etc/systemd/system/opencode-pty-supervisor@.service.d/paths.conf`]);
    assert.is(copied.code, 0, copied.stderr);
    assert.is((await sandbox.systemctl('daemon-reload')).code, 0);
    assert.is((await sandbox.systemctl('restart', BROKER_UNIT)).code, 0);
    const broker = await sandbox.exec(['sh', '-c', `tr '\\0' ' ' </proc/${await brokerPid(sandbox)}/cmdline`]);
    assert.ok(broker.stdout.includes(`${next}/broker.cjs`), broker.stdout);
    const helper = await sandbox.exec(['sh', '-c', 'for u in $(systemctl list-units --plain --no-legend "opencode-pty-session-*" | cut -d" " -f1); do readlink /proc/$(systemctl show -P MainPID $u)/exe; done']);
    assert.is(helper.stdout.trim(), '/opt/opencode-pty/opencode-pty-session', 'the session helper of the build before');
  });
});

test.run();
