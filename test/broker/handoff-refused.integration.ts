// A hand-off the kernel refuses. The broker runs without capabilities, so a descriptor it sends fails
// with ETOOMANYREFS while its user (uid 0, shared with every root process on the host) has more
// descriptors in flight than its RLIMIT_NOFILE (unix(7), too_many_unix_fds in net/unix): any root
// process that queues descriptors and does not read them, a peer-close test say, can cause it.
// The start must then fail with a clear ERROR, its slot come free and its worker go, never a bare
// close with the slot held by a worker that waits for a session it never got.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync, openSync } from 'node:fs';
import { native } from '../../src/native/binding.ts';
import { bootSandbox, type Sandbox } from '../sandbox/index.ts';
import { BROKER_UNIT } from '../sandbox/deploy.ts';
import { Agent } from '../support/agent.ts';
import { deploySupervisor, stopBroker, brokerProperty } from '../support/supervisor.ts';
import { until } from '../support/wait.ts';

/** The broker's descriptor limit here (soft and hard, so Node cannot raise it); it needs about 40; above what other root processes on a busy host keep in flight. */
const BROKER_NOFILE = 2048;

let sandbox: Sandbox;
let agent: Agent;

test.before(async () => {
  sandbox = await bootSandbox({ name: 'broker-handoff-refused' });
  await deploySupervisor(sandbox, { limits: { idleExitMs: 600_000 } });
  await sandbox.install([{ content: `[Service]\nLimitNOFILE=${BROKER_NOFILE}\n`, to: '/etc/systemd/system/opencode-pty-supervisor@.service.d/nofile.conf' }]);
  const reload = await sandbox.systemctl('daemon-reload');
  assert.is(reload.code, 0, reload.stderr);
  agent = await Agent.start(sandbox);
});

test.after(async () => {
  await agent?.release();
  await stopBroker(sandbox);
  await sandbox?.stop();
});

/** Descriptors queued on a socket nobody reads: in flight for uid 0 until closed. */
function inFlight(count: number): () => void {
  const [a, b] = native().socketpair();
  const file = openSync('/dev/null', 'r');
  for (let sent = 0; sent < count; sent += 250) native().sendmsg(a, Buffer.from('x'), 0, 1, Array(Math.min(250, count - sent)).fill(file));
  closeSync(file);
  return () => {
    closeSync(a);
    closeSync(b);
  };
}

const status = () => brokerProperty(sandbox, 'StatusText');

test('with more descriptors in flight than the broker may have open: the start fails with ERROR INTERNAL, its slot is freed and its worker ends', async () => {
  // The first start boots the broker and its spare (descriptor passing works now).
  const warm = await agent.session(['true']);
  assert.is(warm.code, 0, warm.stderr);
  // The worker that served it waits, warm, for the next start: the one the refused start takes.
  const [taken] = [...(await sandbox.journal(BROKER_UNIT)).matchAll(/worker\[(\d+)\]: session \S+ started/g)].map((match) => match[1]!);
  assert.ok(taken);
  const release = inFlight(2 * BROKER_NOFILE);
  let refused;
  try {
    refused = await agent.session(['sh', '-c', 'echo never']);
  } finally {
    release();
  }
  assert.is.not(refused.code, 0);
  assert.match(refused.stderr, /INTERNAL/, `the client is told, not left with a bare close: ${refused.stderr}`);
  assert.not.match(refused.stderr, /HANGUP|closed the connection/);
  await until(async () => (await status()) === '0 sessions, 0 handshakes', 10_000, 'the slot to be freed', async () => `${await status()}\n${await sandbox.journal(BROKER_UNIT)}`);
  const journal = await sandbox.journal(BROKER_UNIT);
  assert.match(journal, /ETOOMANYREFS/, 'the cause is logged');
  // Told nothing more, the worker that never got its session ends rather than wait for it.
  const alive = async () => (await sandbox.exec(['kill', '-0', taken!])).code === 0;
  await until(async () => !(await alive()), 10_000, `worker ${taken} to end`);
  // Nothing is left stuck: the next start, with the descriptors gone, runs.
  const next = await agent.session(['sh', '-c', 'echo after']);
  assert.is(next.code, 0, next.stderr);
  assert.is(next.stdout, 'after\r\n');
});

test.run();
