// A kept session's helper reached again (src/worker/kept-reach.ts): its HELLO is read before anything is
// sent to it or the session is held, whole, first and in time; anything else is refused, saying why.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { closeSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { native } from '../../src/native/binding.ts';
import { KeptStore } from '../../src/kept-store/store.ts';
import type { KeptRecord } from '../../src/kept-store/record.ts';
import { reachKept, type HelperSender } from '../../src/worker/kept-reach.ts';

const PREFIX = 'opencode-pty-';
const UNIT = 'opencode-pty-session-0123456789abcdef0123456789abcdef.service';
const ID = parseInt('0123456789abc', 16);
const RECORD: KeptRecord = { format: 1, unit: UNIT, sessionId: ID, keepMs: 60_000, retainBytes: 4096, label: '', program: 'sh', cwd: '/', startedAtMs: 1, rows: 24, cols: 80, programPid: 2, mainPid: 3, origin: 1, service: null, detachedSinceMs: null };

/** A store holding the record and a listening rendezvous; `helper` plays the helper on the accepted end. */
async function withRendezvous(helper: (fd: number) => void | Promise<void>, timeoutMs = 2000, sender: HelperSender = { pid: process.pid, uid: 0 }) {
  if (process.getuid?.() !== 0) return undefined; // KeptStore.ensure checks for root's directory
  const base = mkdtempSync(join(tmpdir(), 'kept-reach-'));
  const store = new KeptStore(join(base, 'kept'));
  try {
    store.ensure();
    store.write(RECORD);
    const listening = native().listenUnix(store.socketPath(ID), 4);
    const reached = reachKept(store, UNIT, ID, PREFIX, timeoutMs, sender);
    const accepted = await new Promise<number>((resolve) => {
      const watcher = native().watch(listening, { readable: true }, () => {
        const fd = native().accept(listening);
        if (fd < 0) return;
        watcher.close();
        resolve(fd);
      });
    });
    await helper(accepted);
    const result = await reached;
    closeSync(accepted);
    closeSync(listening);
    if (typeof result !== 'string') closeSync(result.fd);
    return result;
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}

const send = (fd: number, hex: string) => native().sendmsg(fd, Buffer.from(hex, 'hex'), 0, hex.length / 2);

test('HELLO read first: nothing was sent to the helper before it; what follows stays for the link', async () => {
  const result = await withRendezvous(async (fd) => {
    await new Promise((resolve) => setTimeout(resolve, 50)); // the worker has its connection and waits
    const buffer = Buffer.alloc(16);
    assert.is(native().recvmsg(fd, buffer, 0, 16, 1), null, 'nothing sent before HELLO');
    send(fd, '40000000020004' + '410000000206' + '78');
  });
  if (result === undefined) return;
  assert.ok(typeof result !== 'string', String(result));
  assert.is((result as { hello: Buffer }).hello.toString('hex'), '40000000020004');
  assert.equal((result as { record: KeptRecord }).record, RECORD);
});

test('anything but HELLO first, an end before it, or no HELLO in time: refused, saying why', async () => {
  const other = await withRendezvous((fd) => void send(fd, '41000000020678'));
  if (other === undefined) return;
  assert.match(String(other), /another message than HELLO first/);
  assert.match(String(await withRendezvous((fd) => void native().shutdown(fd, 'write'))), /ended its channel before HELLO/);
  assert.match(String(await withRendezvous(() => undefined, 100)), /no HELLO within 100 ms/);
});

// A root process without capabilities can replace the socket in root's directory and answer with a HELLO
// of its own: the kernel's record of the sender (SCM_CREDENTIALS) names it, not the unit's main process.
test("HELLO from another process than the unit's main process, or from another uid: refused, naming both", async () => {
  const hello = '40000000020004';
  const otherPid = await withRendezvous((fd) => void send(fd, hello), 2000, { pid: process.pid + 100_000, uid: 0 });
  if (otherPid === undefined) return;
  assert.match(String(otherPid), new RegExp(`not the one answering at its rendezvous: HELLO came from pid ${process.pid} uid 0, not the unit's main process \\(pid ${process.pid + 100_000} uid 0\\)`));
  const otherUid = await withRendezvous((fd) => void send(fd, hello), 2000, { pid: process.pid, uid: 1500 });
  assert.match(String(otherUid), /not the one answering at its rendezvous: HELLO came from pid \d+ uid 0, not the unit's main process \(pid \d+ uid 1500\)/);
});

test.run();
