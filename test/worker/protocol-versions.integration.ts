// Protocol version 2 served by a real worker and session helper against real systemd: STARTED names
// the program and the dropped environment, END_INPUT ends its input, EXIT and STOPPED carry the end
// record; a version 1 connection gets exactly the bytes it got before.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Sandbox } from '../sandbox/index.ts';
import { bootWorkerSandbox, expectNoUnits, startSession, type RawClient, type WorkerProcess } from './harness.ts';

let sandbox: Sandbox;
let workDir: string;

test.before(async () => {
  ({ sandbox, workDir } = await bootWorkerSandbox('worker-protocol-versions'));
});

test.after(async () => {
  await sandbox?.stop();
});

function session(argv: string[], version: number | undefined, env: Record<string, string> = {}) {
  return startSession(sandbox, workDir, argv, { env, ...(version === undefined ? {} : { version }) });
}

async function done(worker: WorkerProcess, client: RawClient): Promise<void> {
  await client.closed();
  await expectNoUnits(sandbox, worker);
}

const hex = (text: string) => Buffer.from(text, 'latin1').toString('hex');
const u32 = (n: number) => n.toString(16).padStart(8, '0');

for (const version of [undefined, 1]) {
  test(`version 1 (${version === undefined ? 'a hand-off without a version' : 'named'}): the same bytes as before version 2`, async () => {
    const { worker, client } = await session(['/bin/sh', '-c', 'printf hi; exit 3'], version, { SECRET: 'x' });
    await done(worker, client);
    const started = client.frames[0];
    assert.is(started?.type, 'started');
    if (started?.type !== 'started') return;
    // Built by hand: STARTED is mainPid and the unit name; OUTPUT; EXIT is code, status, result.
    const expected =
      '04' + u32(4 + started.unit.length) + u32(started.mainPid) + hex(started.unit) +
      '06' + u32(2) + hex('hi') +
      '0b' + u32(18) + '01' + u32(3) + u32(9) + hex('exit-code');
    assert.is(client.raw.toString('hex'), expected);
  });
}

test('STARTED names the program itself ($$) and every environment name the program did not get', async () => {
  const { worker, client } = await session(['/bin/sh', '-c', 'echo "pid=$$ ppid=$PPID allowed=$OCPTY_ALLOWED"'], 2, {
    OCPTY_ALLOWED: 'yes',
    SECRET: 'no',
    LISTEN_FDS: '3',
    TERM: 'bad term',
  });
  const started = await client.waitFor('started');
  await client.waitFor('exit');
  await done(worker, client);
  assert.ok(started.programPid! > 1);
  assert.is.not(started.programPid, started.mainPid);
  assert.is(client.output.toString().trim(), `pid=${started.programPid} ppid=${started.mainPid} allowed=yes`);
  assert.equal([...started.droppedEnv!].sort(), ['LISTEN_FDS', 'SECRET', 'TERM']);
});

test('EXIT carries the end record: the bytes the client got, unavailable figures as all-ones, sane CPU and time', async () => {
  const { worker, client } = await session(['/bin/sh', '-c', 'read line; echo "got $line"; head -c 5000 /dev/zero | tr "\\0" x; exit 7'], 2);
  await client.waitFor('started');
  client.send({ type: 'input', data: Buffer.from('abc\n') });
  const exit = await client.waitFor('exit');
  await done(worker, client);
  assert.is(exit.code, 1);
  assert.is(exit.status, 7);
  assert.is(exit.result, 'exit-code');
  const record = exit.accounting!;
  assert.is(record.outputBytes, client.output.length);
  assert.is(record.inputBytes, 4);
  // The sandbox has no memory or pids controllers: those two are unavailable, never 0.
  assert.is(record.memoryBytes, null);
  assert.is(record.tasks, null);
  // cpu.stat is in every cgroup v2 directory: read from the unit's own cgroup, CPU is always there.
  assert.ok(record.cpuUsageNsec !== null && record.cpuUsageNsec > 0, String(record.cpuUsageNsec));
  assert.ok(record.durationUsec! > 0 && record.durationUsec! < 600e6, String(record.durationUsec));
  // On the wire: the two unavailable figures are ffffffffffffffff.
  const last = client.raw.subarray(client.raw.length - (5 + 73 + exit.result.length));
  assert.is(last[0], 0x0b, 'EXIT is the last frame');
  const payload = last.subarray(5);
  assert.is(payload.subarray(13, 21).toString('hex'), 'ffffffffffffffff', 'memoryBytes');
  assert.is(payload.subarray(37, 45).toString('hex'), 'ffffffffffffffff', 'tasks');
});

test('END_INPUT: cat sees end of file after its input, also after an unfinished last line', async () => {
  for (const data of ['a\nb\n', 'a\nb']) {
    const { worker, client } = await session(['cat'], 2);
    await client.waitFor('started');
    client.send({ type: 'input', data: Buffer.from(data) });
    client.send({ type: 'end-input' });
    const exit = await client.waitFor('exit');
    await done(worker, client);
    assert.equal([exit.code, exit.status], [1, 0]);
    // Echoed by the terminal, then printed by cat.
    assert.is(client.output.toString().split('b').length - 1, 2, JSON.stringify(client.output.toString()));
  }
});

test('INPUT after END_INPUT, and a second END_INPUT, are PROTOCOL errors', async () => {
  for (const after of [{ type: 'input' as const, data: Buffer.from('x') }, { type: 'end-input' as const }]) {
    const { worker, client } = await session(['/bin/sh', '-c', 'echo ready; exec sleep 100'], 2);
    await client.waitForOutput('ready');
    client.send({ type: 'end-input' });
    client.send(after);
    const error = await client.waitFor('error');
    await done(worker, client);
    assert.is(error.code, 1);
    assert.match(error.message, after.type === 'input' ? 'INPUT after END_INPUT' : 'END_INPUT sent twice');
  }
});

test('STOPPED says how the program ended (SIGHUP here) and carries the end record', async () => {
  const { worker, client } = await session(['/bin/sh', '-c', 'echo ready; exec sleep 100'], 2);
  await client.waitForOutput('ready');
  client.send({ type: 'stop' });
  const stopped = await client.waitFor('stopped');
  await done(worker, client);
  assert.ok(stopped.end, 'version 2 STOPPED has the program end');
  // SIGTERM and SIGHUP go to every process; sleep dies of the first that lands.
  assert.is(stopped.end!.code, 2);
  assert.ok([1, 15].includes(stopped.end!.status), String(stopped.end!.status));
  assert.is(stopped.end!.accounting.outputBytes, client.output.length);
  assert.is(stopped.end!.accounting.tasks, null);
});

test.run();
