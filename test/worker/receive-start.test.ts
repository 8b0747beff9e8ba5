// START and its cwd fd from a hostile peer: every malformed case is refused and leaks nothing.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync, fstatSync, mkdirSync, mkdtempSync, openSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FdSocket } from '../../src/io/fd-socket.ts';
import { native } from '../../src/native/binding.ts';
import { ErrorCode, encodeFrame, type Frame } from '../../src/protocol/index.ts';
import { receiveStart } from '../../src/worker/receive-start.ts';
import { SessionError } from '../../src/protocol/session-error.ts';
import { openFdCount } from '../support/fds.ts';

const scratch = mkdtempSync(join(tmpdir(), 'receive-start-'));
const dir = join(scratch, 'dir');
const other = join(scratch, 'other');
writeFileSync(join(scratch, 'file'), 'x');
for (const path of [dir, other]) mkdirSync(path);

const openFds = openFdCount;
const openDir = (path: string) => openSync(path, 'r');

function startFor(path: string): Frame {
  const stat = statSync(path, { bigint: true });
  return { type: 'start', rows: 24, cols: 80, cwdDev: stat.dev, cwdIno: stat.ino, argv: ['/bin/true'], env: [] };
}

/** Sends `bytes` from the peer end with `fds` attached, then runs receiveStart on the other end. */
async function receive(bytes: Buffer, fds: number[]) {
  const [server, client] = native().socketpair();
  const sent = native().sendmsg(client, bytes, 0, bytes.length, fds);
  assert.is(sent, bytes.length);
  for (const fd of fds) closeSync(fd);
  const socket = new FdSocket(server);
  try {
    return await receiveStart(socket);
  } finally {
    socket.close();
    closeSync(client);
  }
}

async function refused(bytes: Buffer, fds: number[], message: RegExp, code: number = ErrorCode.BAD_START): Promise<void> {
  const baseline = openFds() - fds.length;
  try {
    const result = await receive(bytes, fds);
    closeSync(result.cwdFd);
    assert.unreachable('START was accepted');
  } catch (error) {
    assert.instance(error, SessionError);
    assert.is((error as SessionError).wireCode, code);
    assert.match((error as Error).message, message);
  }
  assert.is(openFds(), baseline, 'every received fd was closed');
}

test('a directory fd matching START is accepted, and bytes after START stay unread', async () => {
  const start = encodeFrame(startFor(dir));
  const input = encodeFrame({ type: 'input', data: Buffer.from('after') });
  const [server, client] = native().socketpair();
  const fd = openDir(dir);
  native().sendmsg(client, start, 0, start.length, [fd]);
  closeSync(fd);
  native().sendmsg(client, input, 0, input.length);
  const socket = new FdSocket(server);
  const result = await receiveStart(socket);
  assert.is(result.frame.argv[0], '/bin/true');
  const stat = fstatSync(result.cwdFd, { bigint: true });
  assert.is(stat.ino, statSync(dir, { bigint: true }).ino);
  closeSync(result.cwdFd);
  const rest = await socket.readExact(input.length, 1);
  assert.equal(rest.data, input);
  socket.close();
  closeSync(client);
});

test('no fd, two fds, a file, another directory', async () => {
  const start = encodeFrame(startFor(dir));
  await refused(start, [], /exactly one descriptor, got 0/);
  await refused(start, [openDir(dir), openDir(dir)], /exactly one descriptor, got 2/);
  await refused(start, [openSync(join(scratch, 'file'), 'r')], /not a directory/);
  await refused(start, [openDir(other)], /does not match the device and inode/);
});

test('more fds than the control space: truncated control data is refused, nothing leaks', async () => {
  const fds = Array.from({ length: 12 }, () => openDir(dir));
  await refused(encodeFrame(startFor(dir)), fds, /more control data|exactly one descriptor/);
});

test('an fd on another frame, or another frame first, is out of order: PROTOCOL', async () => {
  await refused(encodeFrame({ type: 'input', data: Buffer.from('x') }), [openDir(dir)], /expected START, got INPUT/, ErrorCode.PROTOCOL);
  await refused(encodeFrame({ type: 'input', data: Buffer.from('x') }), [], /expected START, got INPUT/, ErrorCode.PROTOCOL);
  await refused(encodeFrame({ type: 'stop' }), [], /expected START, got STOP/, ErrorCode.PROTOCOL);
  await refused(encodeFrame({ type: 'credit', bytes: 1 }), [], /expected START, got CREDIT/, ErrorCode.PROTOCOL);
  await refused(encodeFrame({ type: 'resize', rows: 1, cols: 1 }), [], /expected START, got RESIZE/, ErrorCode.PROTOCOL);
  await refused(encodeFrame({ type: 'signal', signal: 2 }), [], /expected START, got SIGNAL/, ErrorCode.PROTOCOL);
  // A second HELLO (the broker already took the first).
  await refused(Buffer.from('01000000084f43505400010001', 'hex'), [], /expected START, got HELLO/, ErrorCode.PROTOCOL);
});

test('a malformed START payload is a BAD_START with every fd closed', async () => {
  const start = encodeFrame(startFor(dir));
  start.writeUInt16BE(0, 5); // rows 0
  await refused(start, [openDir(dir)], /rows/);
});

test('an unknown type or oversize length is refused from the header alone', async () => {
  await refused(Buffer.from([0x7f, 0, 0, 0, 0]), [openDir(dir)], /./, ErrorCode.PROTOCOL);
  await refused(Buffer.from([0x03, 0xff, 0xff, 0xff, 0xff]), [openDir(dir)], /./, ErrorCode.PROTOCOL);
});

test.after(() => rmSync(scratch, { recursive: true }));

test('an O_PATH directory fd is refused as BAD_START at once, before any fstat', async () => {
  // Node has no O_PATH constant; its value on Linux (open(2)).
  const fd = openSync(dir, 0o10000000 | 0o200000);
  await refused(encodeFrame(startFor(dir)), [fd], /O_PATH/);
});

test.run();
