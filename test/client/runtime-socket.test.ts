// The client's socket on the runtime: a peer that is gone is reported by the read side, after the bytes it sent
// before going, never as a write error that loses them.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { native } from '../../src/native/binding.ts';
import { encodeFrame } from '../../src/protocol/index.ts';
import { RuntimeSocket } from '../../src/client/runtime-socket.ts';
import { ClientError, connect } from '../../src/client/index.ts';
import { TestServer } from './test-server.ts';

test('writes after the peer closed are dropped quietly; its last bytes and the end still arrive', async () => {
  const server = new TestServer();
  const accepted = server.accept();
  const socket = await RuntimeSocket.connect(server.path);
  const conn = await accepted;
  const chunks: Buffer[] = [];
  const errors: ClientError[] = [];
  socket.on('error', (error) => errors.push(error));
  const ended = new Promise<void>((resolve) => socket.on('end', resolve));
  // The peer's last frame, then it goes with nothing of ours unread: our next write meets EPIPE.
  native().sendmsg(conn.socket.fd, Buffer.from('last words'), 0, 10);
  conn.close();
  for (let i = 0; i < 4; i++) socket.write(Buffer.from('credit'));
  socket.writeUrgent(Buffer.from('urgent'));
  socket.startReading((chunk) => chunks.push(chunk));
  await ended;
  assert.is(Buffer.concat(chunks).toString(), 'last words');
  assert.equal(errors, [], 'no write error was reported');
  socket.close();
  server.close();
});

test('past a full kernel buffer the runtime queue takes over: every byte arrives once, in order, urgent ones ahead', async () => {
  const server = new TestServer();
  const accepted = server.accept();
  const socket = await RuntimeSocket.connect(server.path);
  const conn = await accepted;
  socket.startReading(() => {});
  // 4 MiB of numbered data frames, far beyond the socket buffer, written while the server reads nothing.
  const chunks: Buffer[] = [];
  for (let i = 0; i < 512; i++) chunks.push(Buffer.alloc(8192, i % 64));
  for (const chunk of chunks) socket.write(chunk);
  assert.ok(socket.writableLength > 0, 'the kernel did not take it all');
  socket.writeUrgent(Buffer.from([0xff]));
  const drained = new Promise<void>((resolve) => socket.on('drain', resolve));
  const total = chunks.length * 8192 + 1;
  const got = (await conn.socket.readExact(total, 0)).data;
  await drained;
  assert.is(socket.writableLength, 0);
  const urgentAt = got.indexOf(0xff);
  assert.ok(urgentAt >= 0 && urgentAt < total - 1, 'the urgent byte went ahead of data still queued');
  const data = Buffer.concat([got.subarray(0, urgentAt), got.subarray(urgentAt + 1)]);
  assert.ok(data.equals(Buffer.concat(chunks)), 'the data, whole and in order');
  socket.close();
  server.close();
});

test('a refusal racing HELLO: ERROR sent and closed with HELLO unread still reaches connect() as that ERROR', async () => {
  const server = new TestServer();
  const accepted = server.accept();
  const connecting = connect(server.path).then(
    () => undefined,
    (error: ClientError) => error,
  );
  const conn = await accepted;
  // No read: HELLO stays in our receive queue, so closing resets the connection (ECONNRESET on the client).
  const refusal = encodeFrame({ type: 'error', code: 4, message: 'authentication admission limit reached' });
  native().sendmsg(conn.socket.fd, refusal, 0, refusal.length);
  conn.close();
  const error = await connecting;
  assert.instance(error, ClientError);
  assert.is(error!.code, 'ADMISSION');
  assert.is(error!.message, 'authentication admission limit reached');
  server.close();
});

test.run();
