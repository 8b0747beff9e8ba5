// A kept session's connections as root counts them (kept-connections.ts): conn numbers, the count
// going down once per connection (our hang-up watch or the helper's DETACHED, whichever first), what a
// DETACHED leaves written (the rest, then the ERROR, then EOF), and those held for the last frame.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync } from 'node:fs';
import { FdSocket } from '../../src/io/fd-socket.ts';
import { native } from '../../src/native/binding.ts';
import { ErrorCode } from '../../src/protocol/index.ts';
import { KeptConnections } from '../../src/worker/kept-connections.ts';
import { RawClient } from '../support/frame-client.ts';

function pair(): { ours: FdSocket; client: RawClient; clientFd: number } {
  const [clientFd, ours] = native().socketpair();
  const socket = new FdSocket(ours);
  socket.on('error', () => undefined);
  return { ours: socket, client: new RawClient(clientFd, 3), clientFd };
}

test('conns count up from 1 after the START\'s 0; each leaves the count once, whichever sign comes first', async () => {
  const gone: number[] = [];
  const connections = new KeptConnections({ detached: (conn) => gone.push(conn) }, 1000, 3);
  const start = pair();
  const second = pair();
  connections.add(0, start.ours);
  assert.is(connections.nextConn(), 1);
  connections.add(1, second.ours);
  assert.is(connections.nextConn(), 2);
  assert.is(connections.attached, 2);
  // The client of conn 1 closes: our watch counts it gone; the helper's DETACHED after it changes nothing more.
  second.client.close();
  await new Promise<void>((resolve) => second.ours.once('hangup', () => resolve()));
  assert.equal(gone, [1]);
  // Our copy went with it, before any DETACHED: a helper that never sends one (stopped) pins nothing of root's.
  assert.ok(second.ours.closed, 'our copy of the hung-up connection closed at our own watch');
  connections.detached({ conn: 1, reason: 'client-gone', code: 0, remainder: Buffer.alloc(0), text: '' });
  assert.equal(gone, [1]);
  assert.is(connections.attached, 1);
  assert.is(connections.nextConn(), 1, 'conn 1 is free again after its DETACHED');
  connections.closeAll();
  start.client.close();
});

test('a DETACHED with a code: the rest of the frame, then the ERROR, then EOF; an ending one is held for the last frame', async () => {
  const gone: number[] = [];
  const connections = new KeptConnections({ detached: (conn) => gone.push(conn) }, 1000, 3);
  const flow = pair();
  const ending = pair();
  connections.add(1, flow.ours);
  connections.add(2, ending.ours);
  // The rest of an OUTPUT frame the helper had begun: its header promised 3 bytes, 1 was written.
  const output = Buffer.from([0x06, 0, 0, 0, 3, 0x61, 0x62, 0x63]);
  native().sendmsg(flow.ours.fd, output, 0, 6);
  connections.detached({ conn: 1, reason: 'flow', code: ErrorCode.FLOW, remainder: output.subarray(6), text: 'too slow' });
  await flow.client.closed();
  assert.equal(flow.client.frames.map((frame) => frame.type === 'error' ? `error ${frame.code}` : frame.type), ['output', `error ${ErrorCode.FLOW}`]);
  connections.detached({ conn: 2, reason: 'ending', code: 0, remainder: Buffer.from([1, 2]), text: '' });
  assert.equal(gone, [1, 2]);
  const recipients = connections.recipients();
  assert.is(recipients.length, 1);
  assert.is(recipients[0]!.socket, ending.ours);
  assert.equal([...recipients[0]!.remainder!], [1, 2]);
  connections.closeAll();
  ending.client.close();
});

test('a conn is free again once its DETACHED came, not at our own hang-up; none is given while all 255 are held at once (the refusal is the caller\'s: SESSION_STATE)', async () => {
  const connections = new KeptConnections({ detached: () => undefined }, 1000, 3);
  const peers: number[] = [];
  const sockets: FdSocket[] = [];
  for (let conn = 1; conn <= 255; conn++) {
    const [a, b] = native().socketpair();
    peers.push(b);
    const socket = new FdSocket(a);
    socket.on('error', () => undefined);
    sockets.push(socket);
    assert.is(connections.nextConn(), conn);
    connections.add(conn, socket);
  }
  assert.is(connections.nextConn(), undefined);
  // Conn 7's client hangs up: root counts it gone, but the helper may still write about conn 7 until its DETACHED.
  const hungUp = new Promise<void>((resolve) => sockets[6]!.once('hangup', () => resolve()));
  closeSync(peers[6]!);
  await hungUp;
  assert.is(connections.attached, 254);
  assert.is(connections.nextConn(), undefined);
  connections.detached({ conn: 7, reason: 'client-gone', code: 0, remainder: Buffer.alloc(0), text: '' });
  assert.is(connections.nextConn(), 7);
  connections.closeAll();
  for (const [index, fd] of peers.entries()) if (index !== 6) closeSync(fd);
});

test.run();
