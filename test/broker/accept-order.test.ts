// The serving order of one accepted batch (accept-order.ts): the MainPID first, then root, then the
// rest in arrival order; and the native batch's decoding.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { type AcceptedConnection, acceptedConnections, fromMainPid, serveOrder } from '../../src/broker/accept-order.ts';

const CLIENT = 1000;
const conn = (fd: number, pid: number, uid = CLIENT): AcceptedConnection => ({ fd, credentials: { pid, uid, gid: uid } });

test('the MainPID is served first, root next, everyone else in arrival order', () => {
  const batch = [conn(10, 501), conn(11, 502), conn(12, 900, 0), conn(13, 77), conn(14, 503), conn(15, 77)];
  assert.equal(serveOrder(batch, 77, CLIENT).map((c) => c.fd), [13, 15, 12, 10, 11, 14]);
});

test('without a known MainPID the order is arrival order but for root', () => {
  const batch = [conn(10, 501), conn(11, 1, 0), conn(12, 502)];
  assert.equal(serveOrder(batch, undefined, CLIENT).map((c) => c.fd), [11, 10, 12]);
});

test("the MainPID's PID under another uid is not the MainPID", () => {
  const other = conn(10, 77, 1001);
  assert.is(fromMainPid(other, 77, CLIENT), false);
  assert.is(fromMainPid(conn(11, 77), 77, CLIENT), true);
  assert.equal(serveOrder([conn(12, 5), other], 77, CLIENT).map((c) => c.fd), [12, 10]);
});

test('a connection whose credentials failed keeps its place among the rest', () => {
  const failed: AcceptedConnection = { fd: 9, credentials: undefined, credentialsError: 107 };
  assert.is(fromMainPid(failed, 77, CLIENT), false);
  assert.equal(serveOrder([failed, conn(10, 77)], 77, CLIENT).map((c) => c.fd), [10, 9]);
});

test('every connection of the batch is served exactly once', () => {
  const batch = Array.from({ length: 200 }, (_, i) => conn(100 + i, i % 7 === 0 ? 77 : 1000 + i, i % 11 === 0 ? 0 : CLIENT));
  const order = serveOrder(batch, 77, CLIENT);
  assert.equal([...order].map((c) => c.fd).sort((a, b) => a - b), batch.map((c) => c.fd));
  // Within each rank, arrival order holds.
  const rest = order.filter((c) => !fromMainPid(c, 77, CLIENT) && c.credentials?.uid !== 0).map((c) => c.fd);
  assert.equal(rest, [...rest].sort((a, b) => a - b));
});

test('the native quadruples decode, uid and gid unsigned, a failed SO_PEERCRED as its errno', () => {
  const raw = Int32Array.from([7, 123, 1000, 1001, 8, -107, -1, -1, 9, 5, -2, -2]);
  assert.equal(acceptedConnections(raw), [
    { fd: 7, credentials: { pid: 123, uid: 1000, gid: 1001 } },
    { fd: 8, credentials: undefined, credentialsError: 107 },
    { fd: 9, credentials: { pid: 5, uid: 4294967294, gid: 4294967294 } },
  ]);
  assert.equal(acceptedConnections(new Int32Array(0)), []);
});

test.run();
