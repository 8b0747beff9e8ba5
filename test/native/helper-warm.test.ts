// The session helper as a warm unit starts it (`--warm` alone; native/session/warm.c), played by hand:
// HELLO first and nothing opened; CLAIMED only after CLAIM; LAUNCH's two descriptors and arguments make
// it a fresh helper; the channel's end or anything else ends it at once.
import { spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { FdSocket } from '../../src/io/fd-socket.ts';
import { native } from '../../src/native/binding.ts';
import { helperPath } from '../../src/worker/helper-path.ts';
import { goWith, startedFrame } from './helper-harness.ts';

const HELLO = [0x40, 0, 0, 0, 2, 0, 5];
const CLAIM = Buffer.from([0x08, 0, 0, 0, 0]);
const CLAIMED = [0x49, 0, 0, 0, 0];

/** LAUNCH built by hand: "ARG\0" each. */
function launch(args: string[]): Buffer {
  const payload = Buffer.from(args.map((arg) => `${arg}\0`).join(''));
  const header = Buffer.from([0x09, 0, 0, 0, 0]);
  header.writeUInt32BE(payload.length, 1);
  return Buffer.concat([header, payload]);
}

function warmHelper() {
  const placeholderDir = openSync('/', 'r');
  const placeholderOut = openSync('/dev/null', 'w');
  const [ours, theirs] = native().socketpair();
  const child = spawn(helperPath(), ['--warm'], { stdio: [placeholderDir, placeholderOut, theirs] });
  for (const fd of [placeholderDir, placeholderOut, theirs]) closeSync(fd);
  const control = new FdSocket(ours);
  control.on('error', () => undefined);
  let got = Buffer.alloc(0);
  let wake = () => {};
  control.startReading((chunk) => {
    got = Buffer.concat([got, chunk]);
    wake();
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const bytes = async (count: number) => {
    while (got.length < count) await new Promise<void>((resolve) => (wake = resolve));
    return [...got.subarray(0, count)];
  };
  return { child, control, exited, bytes, received: () => [...got] };
}

test('HELLO first, then nothing until CLAIM; its channel closed, it exits at once with status 0', async () => {
  const warm = warmHelper();
  assert.equal(await warm.bytes(7), HELLO);
  warm.control.close();
  assert.is(await warm.exited, 0);
  assert.equal(warm.received(), HELLO, 'nothing but HELLO');
});

test('anything but CLAIM first ends it without an answer', async () => {
  const warm = warmHelper();
  await warm.bytes(7);
  warm.control.write(Buffer.from([0x02, 0, 0, 0, 0]));
  assert.is(await warm.exited, 0);
  assert.equal(warm.received(), HELLO);
});

test('CLAIM is answered by CLAIMED; a LAUNCH with one descriptor instead of two ends it (status 1)', async () => {
  const warm = warmHelper();
  await warm.bytes(7);
  warm.control.write(CLAIM);
  assert.equal((await warm.bytes(12)).slice(7), CLAIMED);
  const dir = openSync(tmpdir(), 'r');
  // The channel takes the descriptors it sends (and closes its copies once sent).
  warm.control.write(launch(['24', '80', 'true']), [dir]);
  assert.is(await warm.exited, 1);
});

test('CLAIM, LAUNCH with the directory and the client, ENV and GO: the program runs there with those arguments and that environment', async () => {
  const dirPath = realpathSync(mkdtempSync(join(tmpdir(), 'warm-')));
  try {
    const warm = warmHelper();
    await warm.bytes(7);
    warm.control.write(CLAIM);
    await warm.bytes(12);
    const dir = openSync(dirPath, 'r');
    const [clientOurs, clientTheirs] = native().socketpair();
    warm.control.write(launch(['--env-from-control', '--protocol=2', '24', '80', 'sh', '-c', 'printf "%s|%s|%s" "$(pwd)" "$X" "$1"', 'sh', 'a b']), [dir, clientTheirs]);
    const env = Buffer.from('X=warm\0');
    const envHeader = Buffer.from([0x04, 0, 0, 0, 0]);
    envHeader.writeUInt32BE(env.length, 1);
    warm.control.write(Buffer.concat([envHeader, env, goWith(startedFrame(2))]));
    const client = new FdSocket(clientOurs);
    client.on('error', () => undefined);
    let output = Buffer.alloc(0);
    const ended = new Promise<void>((resolve) => client.once('end', () => resolve()));
    client.startReading((chunk) => (output = Buffer.concat([output, chunk])));
    assert.is(await warm.exited, 0);
    await ended;
    // STARTED first, then OUTPUT frames (type 0x06): their payloads are the program's output.
    let at = 5 + output.readUInt32BE(1);
    assert.is(output[0], 0x04, 'STARTED first');
    let text = '';
    while (at + 5 <= output.length) {
      const length = output.readUInt32BE(at + 1);
      if (output[at] === 0x06) text += output.subarray(at + 5, at + 5 + length).toString();
      at += 5 + length;
    }
    assert.is(text, `${dirPath}|warm|a b`);
    client.close();
  } finally {
    rmSync(dirPath, { recursive: true, force: true });
  }
});

test.run();
