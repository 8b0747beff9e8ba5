// Kept sessions outlive the supervisor (issue 30) against the real systemd: the broker and every worker
// killed (SIGKILL) while kept programs write, then ATTACH from the last offset each connection saw: the
// bytes received across connections are exactly the program's output (sha256). The next broker adopts
// each session through its rendezvous socket and holds it as a detached kept session; nothing of it is
// left once it ends (unit, socket, record).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHash } from 'node:crypto';
import type { Sandbox } from '../sandbox/index.ts';
import type { Agent } from '../support/agent.ts';
import { bootSupervisor, brokerPid, killSupervisor, sessionUnits } from '../support/supervisor.ts';
import { until } from '../support/wait.ts';
import { BROKER_UNIT } from '../sandbox/deploy.ts';

let sandbox: Sandbox;
let agent: Agent;

test.before(async () => {
  ({ sandbox, agent } = await bootSupervisor('kept-survive', { limits: { maxSessions: 6, maxKept: 4 } }));
});

test.after(async () => {
  await sandbox?.stop();
});

const sha = (text: string) => createHash('sha256').update(text).digest('hex');
/** `seq 1 N` as the terminal gives it (ONLCR: \r\n). */
const seq = (n: number) => Array.from({ length: n }, (_, i) => `${i + 1}\r\n`).join('');
/** Writes `seq 1 N` in `steps` pieces, `pauseS` apart: output throughout, known byte for byte. */
const paced = (n: number, steps: number, pauseS: number) =>
  `k=0; while [ $k -lt ${steps} ]; do seq $((k*${n / steps}+1)) $(((k+1)*${n / steps})); k=$((k+1)); sleep ${pauseS}; done; read line; exit 4`;

const keptFiles = async () => (await sandbox.exec(['sh', '-c', 'ls -A /run/opencode-pty-kept 2>/dev/null'])).stdout.split('\n').filter(Boolean);


test('kill -9 of the broker and every worker mid-output: each session runs on, and ATTACH from the last offset seen gives the rest (sha256)', async () => {
  const n = 30_000;
  const expected = seq(n);
  const argv = ['sh', '-c', paced(n, 300, 0.02)];
  const detached = await agent.keep({ op: 'start', name: 'd', argv, keepMs: 120_000, label: 'detached', read: { bytes: 1000 } });
  assert.is(detached.error, undefined, detached.message);
  const first = await agent.keep({ op: 'detach', name: 'd' });
  const attached = await agent.keep({ op: 'start', name: 'a', argv, keepMs: 120_000, label: 'attached', read: { bytes: 2000 } });
  assert.is(attached.error, undefined, attached.message);
  assert.is((await sessionUnits(sandbox)).length, 2);
  assert.equal((await keptFiles()).sort(), [`${detached.id}.json`, `${detached.id}.sock`, `${attached.id}.json`, `${attached.id}.sock`].sort());

  await killSupervisor(sandbox);
  // The attached connection ends with its worker (the helper lets it go): no last frame, an offset to come back to.
  const cut = await agent.keep({ op: 'read', name: 'a', read: { untilEnd: true, ms: 10_000 } });
  assert.ok(cut.end === undefined, `no last frame: ${JSON.stringify(cut.end)}`);
  assert.is(cut.sha256, sha(expected.slice(0, cut.bytes!)), 'what the attached connection got is a prefix of the output');
  assert.is((await sessionUnits(sandbox)).length, 2, 'both sessions run on without a supervisor');

  // The first ATTACH starts the broker by socket activation; its orphan scan adopts both sessions.
  const asked = Date.now();
  const back = await agent.keep({ op: 'attach', name: 'a2', id: attached.id!, from: cut.offset, role: 'control', read: { bytes: 1 } });
  const firstByteMs = Date.now() - asked;
  assert.is(back.error, undefined, back.message);
  assert.is(back.first, cut.offset);
  const rest = await agent.keep({ op: 'read', name: 'a2', read: { bytes: expected.length - cut.offset! } });
  assert.is(rest.sha256, sha(expected.slice(cut.offset!)), 'the rest, nothing lost or repeated across the kill');
  const other = await agent.keep({ op: 'attach', name: 'd2', id: detached.id!, from: first.offset, read: { bytes: expected.length - first.offset! } });
  assert.is(other.error, undefined, other.message);
  assert.is(first.sha256, sha(expected.slice(0, first.bytes!)));
  assert.is(other.sha256, sha(expected.slice(first.offset!)), 'the detached session too');

  const listed = (await agent.keep({ op: 'list' })).list as { id: number; label: string; controllers: number }[];
  assert.equal(listed.map((one) => one.label).sort(), ['attached', 'detached'], 'both listed with their labels after the adoption');

  // Both end as kept sessions do: their EXIT to the connection attached, then nothing of them is left.
  for (const name of ['a2', 'd2']) {
    await agent.keep({ op: 'write', name, data: 'x\r' });
    const ended = await agent.keep({ op: 'read', name, read: { untilEnd: true } });
    assert.is((ended.end as { status?: number } | undefined)?.status, 4, `${name}: ${JSON.stringify(ended)}`);
  }
  await until(async () => (await sessionUnits(sandbox)).length === 0 && (await keptFiles()).length === 0, 15_000, 'units, sockets and records gone');

  // A cold start to compare with: the broker stopped with nothing to keep, then a START through socket activation.
  await sandbox.systemctl('stop', BROKER_UNIT);
  const coldAsked = Date.now();
  const cold = await agent.keep({ op: 'start', name: 'cold', argv: ['sh', '-c', 'echo x; read line'], keepMs: 60_000, read: { bytes: 1 } });
  const coldMs = Date.now() - coldAsked;
  assert.is(cold.error, undefined, cold.message);
  // Two sessions to adopt: the second waits for a second worker's start (the first takes the early spare).
  console.log(`two kept sessions: first ATTACH after the kill (activation, adoption, attach) to its first byte: ${firstByteMs} ms; a cold START to its first byte: ${coldMs} ms`);
  assert.ok(firstByteMs < coldMs + 1500, `the adoption does not hold the first ATTACH back for long: ${firstByteMs} ms against ${coldMs} ms`);
  await agent.keep({ op: 'stop-session', id: cold.id! });
});

test('kill -9 of every worker, the broker alive: each kept session is adopted by a new worker at once, not stopped; the rest of its output after', async () => {
  const n = 20_000;
  const expected = seq(n);
  const started = await agent.keep({ op: 'start', name: 'w', argv: ['sh', '-c', paced(n, 200, 0.02)], keepMs: 120_000, read: { bytes: 1500 } });
  assert.is(started.error, undefined, started.message);
  const broker = await brokerPid(sandbox);
  const killed = await sandbox.exec(['sh', '-c', `for p in $(cat /sys/fs/cgroup$(systemctl show -P ControlGroup ${BROKER_UNIT})/cgroup.procs); do [ "$p" = ${broker} ] || kill -9 $p; done`]);
  assert.is(killed.code, 0, killed.stderr);
  const cut = await agent.keep({ op: 'read', name: 'w', read: { untilEnd: true, ms: 10_000 } });
  assert.is(cut.sha256, sha(expected.slice(0, cut.bytes!)));
  // Listed again (adopted) with the broker that saw its worker die, and its unit never stopped.
  await until(async () => ((await agent.keep({ op: 'list' })).list as { id: number }[]).some((one) => one.id === started.id), 10_000, 'adopted again');
  assert.is(await brokerPid(sandbox), broker, 'the same broker');
  const rest = await agent.keep({ op: 'attach', name: 'w2', id: started.id!, from: cut.offset, read: { bytes: expected.length - cut.offset! } });
  assert.is(rest.sha256, sha(expected.slice(cut.offset!)), 'nothing lost or repeated across the worker\'s death');
  assert.ok((await sandbox.journal()).includes('exited with its kept session'), 'the journal says it runs on');
  await agent.keep({ op: 'stop-session', id: started.id! });
  await until(async () => (await sessionUnits(sandbox)).length === 0 && (await keptFiles()).length === 0, 15_000, 'gone after STOP_SESSION');
});

/** The broker unit's RestartSec=: a crashed broker is started again this long after. */
const RESTART_SEC_MS = 100;

/** Socket activation to a first byte: a cold START (nothing to adopt), then after a kill with one kept
 * session, its first ATTACH (activation, the orphan scan's adoption, the ATTACH), alternated. */
test('the first ATTACH after a crash waits for no more than a cold start does (one kept session; medians of alternated rounds)', async () => {
  const rounds = 5;
  const cold: number[] = [];
  const crash: number[] = [];
  for (let round = 0; round < rounds; round += 1) {
    await sandbox.systemctl('stop', BROKER_UNIT);
    let asked = Date.now();
    const started = await agent.keep({ op: 'start', name: `t${round}`, argv: ['sh', '-c', 'echo x; exec sleep 600'], keepMs: 60_000, read: { bytes: 1 } });
    cold.push(Date.now() - asked);
    assert.is(started.error, undefined, started.message);
    await agent.keep({ op: 'detach', name: `t${round}` });
    await killSupervisor(sandbox);
    asked = Date.now();
    const back = await agent.keep({ op: 'attach', name: `t${round}b`, id: started.id!, from: 0, read: { bytes: 1 } });
    crash.push(Date.now() - asked);
    assert.is(back.error, undefined, back.message);
    await agent.keep({ op: 'stop-session', id: started.id! });
    await until(async () => (await sessionUnits(sandbox)).length === 0 && (await keptFiles()).length === 0, 15_000, 'the session gone');
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  console.log(`cold START to its first byte: ${cold.join(' ')} ms (median ${median(cold)}); first ATTACH after a kill -9 to its first byte: ${crash.join(' ')} ms (median ${median(crash)})`);
  // systemd starts the next broker 100 ms after the crash (the unit's RestartSec=), not at the ATTACH.
  assert.ok(median(crash) < median(cold) * 1.5 + 100 + RESTART_SEC_MS, `the adoption does not hold the first ATTACH back: ${median(crash)} ms against ${median(cold)} ms`);
});

test.run();
