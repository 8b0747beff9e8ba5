// The session helper run as a plain child process: cwd by fd, its terminal, framing both ways, bulk output, exit status.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { helperPath } from '../../src/worker/helper-path.ts';

const INPUT = 0x05;
const OUTPUT = 0x06;
const RESIZE = 0x07;
const MAX_IO = 32768;

// Frames built by hand, not with the protocol's encoder: 1 byte type, 4 bytes length BE, payload.
function frame(type: number, payload: Buffer | string): Buffer {
  const body = typeof payload === 'string' ? Buffer.from(payload, 'latin1') : payload;
  const header = Buffer.alloc(5);
  header[0] = type;
  header.writeUInt32BE(body.length, 1);
  return Buffer.concat([header, body]);
}

function resize(rows: number, cols: number): Buffer {
  const body = Buffer.alloc(4);
  body.writeUInt16BE(rows, 0);
  body.writeUInt16BE(cols, 2);
  return frame(RESIZE, body);
}

interface Ended {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Payloads of every OUTPUT frame, concatenated. */
  output: Buffer;
  stderr: string;
}

/** One helper run: fd 0 a directory, fd 1 a socketpair end (libuv's stdio pipes are socketpairs). */
class Session {
  readonly child: ChildProcess;
  readonly ended: Promise<Ended>;
  #raw: Buffer = Buffer.alloc(0);
  #chunks: Buffer[] = [];
  #text = '';
  #stderr = '';
  #waiters: { text: string; resolve: () => void; reject: (e: Error) => void }[] = [];
  #closed = false;
  /** Anything on fd 1 that is not a well-formed OUTPUT frame; fails `ended`. */
  #violation: Error | undefined;

  constructor(argv: string[], options: { dir?: string; dirFd?: number } = {}) {
    const dirFd = options.dirFd ?? openSync(options.dir ?? tmpdir(), 'r');
    this.child = spawn(helperPath(), argv, { stdio: [dirFd, 'pipe', 'pipe'] });
    if (options.dirFd === undefined) closeSync(dirFd);
    this.child.stdout!.on('data', (chunk: Buffer) => this.#onData(chunk));
    this.socket.on('error', (error) => (this.#violation ??= error)); // e.g. ECONNRESET: the helper died early
    this.child.stderr!.on('data', (chunk: Buffer) => (this.#stderr += chunk.toString('utf8')));
    this.ended = new Promise((resolve, reject) => {
      this.child.on('close', (code, signal) => {
        this.#closed = true;
        for (const w of this.#waiters) w.reject(new Error(`helper ended before ${JSON.stringify(w.text)}; got ${JSON.stringify(this.#text)}`));
        if (this.#raw.length > 0) this.#violation ??= new Error(`${this.#raw.length} bytes of a partial frame at EOF`);
        if (this.#violation) reject(this.#violation);
        else resolve({ code, signal, output: Buffer.concat(this.#chunks), stderr: this.#stderr });
      });
    });
    this.ended.catch(() => {}); // a test that failed before awaiting it must not crash the suite
  }

  // Decodes OUTPUT frames as they arrive; anything else on fd 1 is a failure of the helper.
  #onData(chunk: Buffer): void {
    this.#raw = this.#raw.length ? Buffer.concat([this.#raw, chunk]) : chunk;
    while (this.#raw.length >= 5 && !this.#violation) {
      const type = this.#raw[0]!;
      const length = this.#raw.readUInt32BE(1);
      if (type !== OUTPUT || length < 1 || length > MAX_IO) {
        this.#violation = new Error(`not an OUTPUT frame of 1..${MAX_IO} bytes: type ${type}, length ${length}`);
        this.#raw = Buffer.alloc(0);
        break;
      }
      if (this.#raw.length < 5 + length) break;
      const payload = this.#raw.subarray(5, 5 + length);
      this.#chunks.push(payload);
      this.#text += payload.toString('latin1');
      this.#raw = this.#raw.subarray(5 + length);
    }
    this.#waiters = this.#waiters.filter((w) => (this.#text.includes(w.text) ? (w.resolve(), false) : true));
  }

  /** Resolves once the terminal's output so far contains `text`; rejects if the helper ends first. */
  waitFor(text: string): Promise<void> {
    if (this.#text.includes(text)) return Promise.resolve();
    if (this.#closed) return Promise.reject(new Error(`helper ended before ${JSON.stringify(text)}`));
    return new Promise((resolve, reject) => this.#waiters.push({ text, resolve, reject }));
  }

  /** Our end of the socketpair: Node types child.stdout as Readable, but it is a duplex Socket. */
  get socket(): Socket {
    return this.child.stdout as unknown as Socket;
  }

  send(bytes: Buffer): Promise<void> {
    return new Promise((resolve, reject) => this.socket.write(bytes, (e) => (e ? reject(e) : resolve())));
  }
}

const sh = (script: string) => ['24', '80', 'sh', '-c', script];
const lines = (text: string) => text.split(/\r?\n/).filter(Boolean);

test('pwd is the directory of fd 0', async () => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'helper-cwd-')));
  try {
    const ended = await new Session(sh('pwd -P'), { dir }).ended;
    assert.is(ended.code, 0);
    assert.equal(lines(ended.output.toString()), [dir]);
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test('the cwd follows the fd, not the path: a directory renamed after opening', async () => {
  const base = realpathSync(mkdtempSync(join(tmpdir(), 'helper-rename-')));
  try {
    const before = join(base, 'before');
    const after = join(base, 'after');
    mkdirSync(before);
    const dirFd = openSync(before, 'r');
    renameSync(before, after);
    mkdirSync(before); // a different directory now sits at the old path
    const session = new Session(sh('pwd -P; stat -c %i .'), { dirFd });
    closeSync(dirFd);
    const ended = await session.ended;
    assert.is(ended.code, 0);
    assert.equal(lines(ended.output.toString()), [after, String(statSync(after).ino)]);
  } finally {
    rmSync(base, { recursive: true });
  }
});

test('the program runs on its own terminal: tty prints /dev/pts/N', async () => {
  const ended = await new Session(['24', '80', 'tty']).ended;
  assert.is(ended.code, 0);
  assert.match(ended.output.toString(), /^\/dev\/pts\/\d+\r\n$/);
});

test('stty size shows ROWS COLS, and the new size after a RESIZE frame', async () => {
  const session = new Session(['31', '97', 'sh', '-c', 'stty size; read x; stty size']);
  await session.waitFor('31 97\r\n');
  await session.send(Buffer.concat([resize(50, 132), frame(INPUT, '\n')]));
  const ended = await session.ended;
  assert.is(ended.code, 0);
  assert.match(ended.output.toString(), /31 97\r\n.*\r\n50 132\r\n$/s);
});

test('INPUT reaches read', async () => {
  const session = new Session(sh('stty -echo; echo ready; read a b; echo "a=$a b=$b"'));
  await session.waitFor('ready\r\n');
  await session.send(frame(INPUT, 'one two\n'));
  const ended = await session.ended;
  assert.is(ended.code, 0);
  assert.is(ended.output.toString(), 'ready\r\na=one b=two\r\n');
});

test('INPUT reaches cat, with frames split at every offset', async () => {
  const session = new Session(sh('stty -echo; echo ready; cat; echo cat-done'));
  await session.waitFor('ready\r\n');
  const stream = Buffer.concat([frame(INPUT, 'hello '), resize(40, 100), frame(INPUT, 'cat\n'), frame(INPUT, '\x04')]);
  for (let i = 0; i < stream.length; i++) await session.send(stream.subarray(i, i + 1));
  const ended = await session.ended;
  assert.is(ended.code, 0);
  assert.is(ended.output.toString(), 'ready\r\nhello cat\r\ncat-done\r\n');
});

test('^C (byte 0x03) ends the program by SIGINT, and the helper ends the same way', async () => {
  const session = new Session(sh('echo ready; exec sleep 100'));
  await session.waitFor('ready\r\n');
  await session.send(frame(INPUT, '\x03'));
  const ended = await session.ended;
  assert.is(ended.signal, 'SIGINT');
  assert.is(ended.code, null);
});

test('exit 7 gives exit code 7', async () => {
  const ended = await new Session(sh('exit 7')).ended;
  assert.is(ended.code, 7);
  assert.is(ended.signal, null);
});

test('a missing program: the message on the terminal, exit code 127', async () => {
  const ended = await new Session(['24', '80', 'no-such-program-for-the-helper']).ended;
  assert.is(ended.code, 127);
  assert.match(ended.output.toString(), 'opencode-pty-session: no-such-program-for-the-helper: No such file or directory');
});

test('a program that is not executable: exit code 126', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'helper-noexec-'));
  try {
    writeFileSync(join(dir, 'script'), '#!/bin/sh\n', { mode: 0o644 });
    const ended = await new Session(['24', '80', join(dir, 'script')]).ended;
    assert.is(ended.code, 126);
    assert.match(ended.output.toString(), 'Permission denied');
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test('1 MiB of base64 arrives complete', async () => {
  const ended = await new Session(sh('stty -opost; head -c 1048576 /dev/zero | base64')).ended;
  assert.is(ended.code, 0);
  const decoded = Buffer.from(ended.output.toString('latin1').replace(/\s+/g, ''), 'base64');
  assert.is(decoded.length, 1048576);
  assert.ok(decoded.every((byte) => byte === 0));
});

test('a background process still holding the terminal does not keep the helper alive', async () => {
  const ended = await new Session(sh('sleep 60 & echo "pid=$!"; echo last')).ended;
  const pid = Number(/pid=(\d+)/.exec(ended.output.toString())?.[1]);
  try {
    assert.is(ended.code, 0);
    assert.match(ended.output.toString(), /last\r\n$/);
    assert.not.throws(() => process.kill(pid, 0), 'the background process outlived the helper');
  } finally {
    if (pid > 0) process.kill(pid, 'SIGKILL');
  }
});

test('the program has only fds 0-2 open (3 is ls reading /proc/self/fd)', async () => {
  const ended = await new Session(['24', '80', 'ls', '/proc/self/fd']).ended;
  assert.is(ended.code, 0);
  assert.equal(ended.output.toString().trim().split(/\s+/), ['0', '1', '2', '3']);
});

test('fds 0-2 of the program are its terminal, and its stdin is not the directory', async () => {
  const ended = await new Session(sh('readlink /proc/self/fd/0 /proc/self/fd/1 /proc/self/fd/2')).ended;
  const [a, b, c] = lines(ended.output.toString());
  assert.match(a!, /^\/dev\/pts\/\d+$/);
  assert.is(b, a);
  assert.is(c, a);
});

for (const [name, bad] of [
  ['an unknown frame type', frame(0x09, '')],
  ['an oversize INPUT', Buffer.concat([Buffer.from([INPUT, 0, 0, 0x80, 0x01])])],
  ['an empty INPUT', frame(INPUT, '')],
  ['a RESIZE of the wrong length', frame(RESIZE, Buffer.alloc(5, 1))],
  ['a RESIZE to 0 rows', resize(0, 80)],
] as const) {
  test(`${name} makes the helper end, hanging the program up`, async () => {
    const session = new Session(sh('echo ready; exec sleep 100'));
    await session.waitFor('ready\r\n');
    await session.send(bad);
    const ended = await session.ended;
    assert.is(ended.signal, 'SIGHUP');
    assert.match(ended.stderr, /^opencode-pty-session: bad /m);
  });
}

test('closing our end makes the helper end', async () => {
  const session = new Session(sh('echo ready; exec sleep 100'));
  await session.waitFor('ready\r\n');
  session.socket.destroy();
  const ended = await session.ended;
  assert.is(ended.signal, 'SIGHUP');
});

test('SIGINT, SIGQUIT, SIGPIPE, SIGTERM leave the helper running; SIGHUP hangs the program up, then drain and same end', async () => {
  // Like an interactive shell: ignores SIGTERM, ends on SIGHUP after a last word.
  const script = "trap '' TERM; trap 'echo bye; exit 3' HUP; echo ready; while read line; do echo \"got:$line\"; done";
  const session = new Session(sh(script));
  await session.waitFor('ready\r\n');
  for (const signal of ['SIGINT', 'SIGQUIT', 'SIGPIPE', 'SIGTERM'] as const) session.child.kill(signal);
  // The signals are pending before these bytes arrive: an answer means the helper lived through them.
  await session.send(frame(INPUT, 'x\n'));
  await session.waitFor('got:x\r\n');
  // A stop: systemd sends SIGTERM and then SIGHUP (SendSIGHUP=yes) to the unit's processes.
  session.child.kill('SIGHUP');
  const ended = await session.ended;
  assert.is(ended.code, 3);
  assert.match(ended.output.toString(), /got:x\r\nbye\r\n$/);
});

test('misuse: exit 2 for bad sizes or no program, 1 when fd 0 is not a directory', async () => {
  for (const argv of [['0', '80', 'true'], ['24', '65536', 'true'], ['24', '+8', 'true'], ['24', '80']]) {
    const ended = await new Session(argv).ended;
    assert.is(ended.code, 2, argv.join(' '));
    assert.match(ended.stderr, 'usage: opencode-pty-session ROWS COLS PROGRAM');
  }
  const dir = mkdtempSync(join(tmpdir(), 'helper-file-'));
  try {
    writeFileSync(join(dir, 'file'), '');
    const fileFd = openSync(join(dir, 'file'), 'r');
    const session = new Session(['24', '80', 'true'], { dirFd: fileFd });
    closeSync(fileFd);
    const ended = await session.ended;
    assert.is(ended.code, 1);
    assert.match(ended.stderr, 'opencode-pty-session: cannot enter the working directory');
    assert.is(ended.output.length, 0);
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test.run();
