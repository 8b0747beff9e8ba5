// A kept session outlives its worker (dialect 4, native/session/keep-rendezvous.c) against the helper's
// real binary: with RENDEZVOUS, the end of its control channel lets every connection go (its client sees
// the end) while the program runs on into the ring; a peer that is not uid 0 is refused at the
// rendezvous; root's next channel starts with HELLO and may ATTACH (replay, then live); no second
// channel is taken beside a live one; without RENDEZVOUS the session ends with its worker, as before.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { native } from '../../src/native/binding.ts';
import { FdSocket } from '../../src/io/fd-socket.ts';
import { HELPER_DIALECT, HelperDecoder, encodeAttach, encodeRendezvous, type HelperMessage } from '../../src/control/helper-channel.ts';
import { TERMINATE, input, sh } from './helper-harness.ts';
import { Conn, KeptRun } from './keep-harness.ts';

/** A control channel as the next worker holds it: its messages decoded as they come. */
class Channel {
  readonly socket: FdSocket;
  readonly messages: HelperMessage[] = [];
  readonly decoder = new HelperDecoder({ kept: { retainBytes: 2 << 20 } });
  ended = false;
  #waiters: (() => void)[] = [];

  constructor(fd: number) {
    this.socket = new FdSocket(fd);
    this.socket.on('error', () => undefined);
    this.socket.on('end', () => ((this.ended = true), this.wake()));
    this.socket.startReading((chunk) => {
      const { messages, fault } = this.decoder.push(chunk);
      if (fault) throw fault;
      this.messages.push(...messages);
      this.wake();
    });
  }

  wake(): void {
    for (const waiter of this.#waiters.splice(0)) waiter();
  }

  /** Until `check` holds, or `ms` pass (false then). */
  async until(check: () => boolean, ms = 10_000): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (!check()) {
      const left = deadline - Date.now();
      if (left <= 0) return false;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#waiters.push(() => (clearTimeout(timer), resolve()));
      });
    }
    return true;
  }
}

/** This process's cgroup (v2): the supervisor's, as RENDEZVOUS names it; its children connect from there. */
const OWN_CGROUP = readFileSync('/proc/self/cgroup', 'utf8').split('\n').find((line) => line.startsWith('0::'))!.slice(3);

function withDir(body: (dir: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'helper-rendezvous-'));
  return body(dir).finally(() => rmSync(dir, { recursive: true, force: true }));
}

/** Connects as `uid` from another process: 'refused' when the helper closes the connection without a byte. */
function connectAs(uid: number, path: string): string {
  const script = `const s = require('net').connect(${JSON.stringify(path)}); let got = 0;
    s.on('data', (d) => { got += d.length; }); s.on('error', (e) => { process.stdout.write('error ' + e.code); process.exit(0); });
    s.on('close', () => { process.stdout.write(got ? 'data' : 'refused'); process.exit(0); });
    setTimeout(() => { process.stdout.write('kept open'); process.exit(0); }, 5000);`;
  return spawnSync(process.execPath, ['-e', script], { uid, gid: uid, encoding: 'utf8' }).stdout;
}

test('the worker gone: connections let go, the program runs on into the ring; a peer queued before taken; a non-root peer refused; root\'s next channel: HELLO, ATTACH, replay then live; none beside it', async () => {
  await withDir(async (dir) => {
    chmodSync(dir, 0o755); // so that the unprivileged peer reaches the socket: only the helper's own check is left to refuse it
    const path = join(dir, 'rendezvous.sock');
    const run = new KeptRun(sh('stty -echo -opost; printf a; read x; printf b; read y; printf c'));
    try {
    const listening = native().listenUnix(path, 4);
    chmodSync(path, 0o777);
    run.control.write(encodeRendezvous(OWN_CGROUP), [listening]); // taken: closed here once the kernel has it
    const c0 = run.conn(0);
    await run.until('the first output', () => c0.output.toString() === 'a');

    // A peer of the supervisor's cgroup that queued before the helper saw its worker go (the next worker
    // can be that quick) is judged as any other at accept, and taken: letting the queue go stopped its
    // session. Here it leaves again, and the helper waits for the next.
    const early = new Channel(native().connectUnix(path));
    run.control.close(); // the worker dies
    await run.until('conn 0 let go', () => c0.eof);
    assert.is(run.child.exitCode, null, 'the helper runs on');
    assert.ok(await early.until(() => early.messages.length > 0), 'the peer queued before the worker went is greeted');
    assert.equal(early.messages[0], { type: 'hello', dialect: HELPER_DIALECT });
    early.socket.close();

    assert.is(connectAs(65534, path), 'refused', 'a peer that is not uid 0 is closed unread');
    assert.is(run.child.exitCode, null);

    const next = new Channel(native().connectUnix(path));
    assert.ok(await next.until(() => next.messages.length > 0), 'HELLO');
    assert.equal(next.messages[0], { type: 'hello', dialect: HELPER_DIALECT });
    assert.ok(await next.until(() => next.messages.length > 1), 'then a LOG');
    assert.match(JSON.stringify(next.messages[1]), /1 peer\(s\) refused at the rendezvous since the last channel/, 'the refused peer is told to the next channel');
    // A second root peer waits in the backlog, unanswered, while this channel lives.
    const beside = new Channel(native().connectUnix(path));
    assert.not.ok(await beside.until(() => beside.messages.length > 0, 300), 'no channel beside a live one');

    const [ours, theirs] = native().socketpair();
    let woke = () => undefined as void;
    const c1 = new Conn(ours, 0n, () => woke(), true);
    next.decoder.attached(1);
    next.socket.write(encodeAttach({ conn: 1, role: 'control', fromOffset: 0n, rows: 24, cols: 80 }), [theirs]);
    const waitFor = async (check: () => boolean) => {
      while (!check()) await new Promise<void>((resolve) => (woke = resolve));
    };
    await waitFor(() => c1.output.toString() === 'a');
    assert.is(c1.attached?.generation, 2, 'the new controller of a session whose old one was let go');
    c1.send(input('x\n'));
    await waitFor(() => c1.output.toString() === 'ab');

    // Its end, asked on the new channel: END there, and the helper exits.
    next.socket.write(TERMINATE);
    assert.ok(await next.until(() => next.messages.some((m) => m.type === 'end')), 'END on the new channel');
    await new Promise<void>((resolve) => (run.child.exitCode !== null || run.child.signalCode !== null ? resolve() : run.child.once('exit', () => resolve())));
    next.socket.close();
    beside.socket.close();
    c1.close();
    } finally {
      if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill('SIGKILL');
    }
  });
});

test("a root peer outside the cgroup RENDEZVOUS names is closed unread, and the helper runs on", async () => {
  await withDir(async (dir) => {
    const path = join(dir, 'rendezvous.sock');
    const run = new KeptRun(sh('printf a; read x'));
    try {
      const listening = native().listenUnix(path, 4);
      run.control.write(encodeRendezvous('/opencode-pty-not-the-supervisor'), [listening]);
      const c0 = run.conn(0);
      await run.until('the first output', () => c0.output.toString() === 'a');
      run.control.close(); // the worker dies
      await run.until('conn 0 let go', () => c0.eof);
      const intruder = new Channel(native().connectUnix(path));
      assert.ok(await intruder.until(() => intruder.ended), 'a uid-0 peer of another cgroup is closed');
      assert.equal(intruder.messages, [], 'and reads nothing, no HELLO');
      intruder.socket.close();
      assert.is(run.child.exitCode, null, 'the helper runs on');
    } finally {
      if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill('SIGKILL');
    }
  });
});

test('RENDEZVOUS names an absolute cgroup path within its bound; a ".." component breaks the channel and the session ends with its worker', async () => {
  assert.throws(() => encodeRendezvous(''), RangeError);
  assert.throws(() => encodeRendezvous('relative/path'), RangeError);
  assert.throws(() => encodeRendezvous('/' + 'x'.repeat(1024)), RangeError);
  await withDir(async (dir) => {
    const run = new KeptRun(sh('printf a; read x'));
    const c0 = run.conn(0);
    await run.until('the first output', () => c0.output.toString() === 'a');
    run.control.write(encodeRendezvous('/a/../b'), [native().listenUnix(join(dir, 'r.sock'), 4)]);
    const exited = await new Promise<boolean>((resolve) => {
      if (run.child.exitCode !== null || run.child.signalCode !== null) return resolve(true);
      const timer = setTimeout(() => resolve(false), 10_000);
      run.child.once('exit', () => (clearTimeout(timer), resolve(true)));
    });
    assert.ok(exited, 'the helper took no rendezvous: its worker\'s channel broken, it ended');
  });
});

test('without RENDEZVOUS a kept session still ends with its worker', async () => {
  const run = new KeptRun(sh('printf a; read x'));
  const c0 = run.conn(0);
  await run.until('the first output', () => c0.output.toString() === 'a');
  run.control.close();
  const exited = await new Promise<boolean>((resolve) => {
    if (run.child.exitCode !== null || run.child.signalCode !== null) return resolve(true);
    const timer = setTimeout(() => resolve(false), 10_000);
    run.child.once('exit', () => (clearTimeout(timer), resolve(true)));
  });
  assert.ok(exited, 'the helper ended with its worker');
});

test.run();
