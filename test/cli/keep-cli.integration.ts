// The CLI's kept-session commands against the real systemd, broker, worker and session helper: root's `ls`
// (table and JSON) and `attach` (observe by default, replay from 0, SIGTERM detaches and the session goes on).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Sandbox } from '../sandbox/index.ts';
import type { Agent } from '../support/agent.ts';
import { bootSupervisor } from '../support/supervisor.ts';
import { until } from '../support/wait.ts';
import { INSTALL_DIR, SOCKET_PATH } from '../sandbox/deploy.ts';
import { bytesText } from '../../src/cli/session-table.ts';

let sandbox: Sandbox;
let agent: Agent;

test.before(async () => {
  ({ sandbox, agent } = await bootSupervisor('keep-cli'));
});

test.after(async () => {
  await sandbox?.stop();
});

const CLI = ['/usr/bin/node', `${INSTALL_DIR}/cli.js`];
/** `seq 1 N` as the terminal gives it (ONLCR: \r\n). */
const seq = (n: number) => Array.from({ length: n }, (_, i) => `${i + 1}\r\n`).join('');

test("root's ls lists the agent's kept session; attach observes its replay from 0, and SIGTERM detaches it; status shows it", async () => {
  const output = seq(300);
  const started = await agent.keep({ op: 'start', name: 'c1', argv: ['sh', '-c', 'seq 1 300; exec sleep 600'], keepMs: 60_000, label: 'cli view', read: { bytes: output.length } });
  assert.is(started.error, undefined, started.message);
  await agent.keep({ op: 'detach', name: 'c1' });
  const id = started.id!;

  let table = '';
  await until(async () => {
    table = (await sandbox.exec([...CLI, 'ls', '--socket', SOCKET_PATH], { timeoutMs: 20_000 })).stdout;
    return new RegExp(`^${id} +detached +main +cli view +sh +\\d+ +${bytesText(output.length).replace('.', '\\.')} +0\\+0 +in \\S+$`, 'm').test(table);
  }, 10_000, 'ls shows the session detached, all its output retained').catch((error: Error) => {
    throw new Error(`${error.message}:\n${table}`);
  });
  assert.match(table, /^ID +STATE +ORIGIN +LABEL +PROGRAM +PID +RETAINED +ATTACHED +DEADLINE$/m);
  const json = await sandbox.exec([...CLI, 'ls', '--json', '--socket', SOCKET_PATH], { timeoutMs: 20_000 });
  const entry = (JSON.parse(json.stdout) as { id: number; label: string; next: number; state: string }[]).find((one) => one.id === id);
  assert.equal(entry && [entry.label, entry.next, entry.state], ['cli view', output.length, 'detached']);

  // SIGTERM once the attach has written the whole replay (an event, not a time: under load the attach may
  // take seconds to connect, and a signal before its handler is installed ends it as 143).
  const attachArgv = [...CLI, 'attach', '--socket', SOCKET_PATH, String(id)].join(' ');
  const script = [
    'out=/tmp/attach.out; err=/tmp/attach.err',
    `printf 'typed by an observer\\n' | ${attachArgv} >$out 2>$err & pid=$!`,
    `until [ "$(wc -c <$out)" -ge ${output.length} ] || ! kill -0 $pid 2>/dev/null; do sleep 0.02; done`,
    'kill -TERM $pid; wait $pid; code=$?',
    'cat $out; cat $err >&2; rm -f $out $err; exit $code',
  ].join('\n');
  const attached = await sandbox.exec(['sh', '-c', script], { timeoutMs: 30_000 });
  assert.is(attached.code, 0, attached.stderr);
  assert.is(attached.stdout, output, 'the replay from 0 is exactly the program\'s output, and the observer\'s input was not echoed');
  assert.match(attached.stderr, `detached from session ${id} at offset ${output.length}`);
  const after = await agent.keep({ op: 'list' });
  const still = (after.list as { id: number; state: string; observers: number }[]).find((one) => one.id === id);
  assert.equal(still && still.state, 'detached', 'the session goes on after the detach');

  const status = await sandbox.exec([...CLI, 'status', '--json'], { timeoutMs: 30_000 });
  const shown = JSON.parse(status.stdout) as { kept: { id: number; state: string; next: number }[] | null; keptError?: string };
  const row = shown.kept?.find((one) => one.id === id);
  assert.equal(row && [row.state, row.next], ['detached', output.length], `status shows it: ${JSON.stringify({ kept: shown.kept, keptError: shown.keptError })}`);

  const stopped = await agent.keep({ op: 'stop-session', id });
  assert.is(stopped.error, undefined, stopped.message);
});

test('attach to an unknown id, and ls by an account that is neither root nor the agent, fail with status 125 and the reason', async () => {
  const unknown = await sandbox.exec([...CLI, 'attach', '--socket', SOCKET_PATH, '12345'], { timeoutMs: 20_000 });
  assert.is(unknown.code, 125);
  assert.match(unknown.stderr, '(NO_SESSION)');
  const other = await sandbox.exec([...CLI, 'ls', '--socket', SOCKET_PATH], { as: 'other', timeoutMs: 20_000 });
  assert.is(other.code, 125, other.stderr);
  assert.match(other.stderr, /EACCES|NOT_PERMITTED/);
});

test.run();
