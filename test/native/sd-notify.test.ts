// Tests for sdNotify: the exact datagram reaches a receiver bound at a path or an abstract name.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { native } from '../../src/native/binding.ts';
import { tempDir, waitForOutput } from './fd-helpers.ts';

const addon = native();

// Node's dgram has no Unix sockets, so the receiver is a tiny Python program printing the datagram as hex.
const RECEIVER = `
import socket, sys
address = sys.argv[1]
if address.startswith('@'):
    address = '\\0' + address[1:]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(address)
print('ready', flush=True)
print(s.recv(65536).hex(), flush=True)
`;

async function deliver(address: string, state: string): Promise<string> {
  const receiver = spawn('python3', ['-c', RECEIVER, address], { stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  receiver.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  try {
    await waitForOutput(receiver.stdout!, 'ready\n');
    addon.sdNotify(address, state);
    const [code] = await once(receiver, 'close');
    assert.is(code, 0);
  } finally {
    if (receiver.exitCode === null) receiver.kill();
  }
  const hex = output.split('\n')[1] ?? '';
  return Buffer.from(hex, 'hex').toString('utf8');
}

const unique = () => `opencode-pty-test-${process.pid}-${Math.random().toString(36).slice(2)}`;

test('a state string reaches a datagram socket bound at a path, byte for byte', async () => {
  const dir = tempDir();
  try {
    const state = 'READY=1\nSTATUS=serving — 3 sessions\nMAINPID=42';
    assert.is(await deliver(join(dir.path, 'notify'), state), state);
  } finally {
    dir.remove();
  }
});

test('an "@name" address reaches the abstract socket of that name', async () => {
  assert.is(await deliver(`@${unique()}`, 'STOPPING=1'), 'STOPPING=1');
});

test('failures throw with code and path: nobody listening, a missing path, too long a name', () => {
  const dir = tempDir();
  try {
    const missing = join(dir.path, 'none');
    assert.throws(
      () => addon.sdNotify(missing, 'READY=1'),
      (e: NodeJS.ErrnoException) => e.code === 'ENOENT' && e.syscall === 'sendto' && e.path === missing,
    );
    assert.throws(() => addon.sdNotify(`@${unique()}`, 'READY=1'), (e: NodeJS.ErrnoException) => e.code === 'ECONNREFUSED');
    assert.throws(() => addon.sdNotify(`@${'n'.repeat(108)}`, 'READY=1'), (e: NodeJS.ErrnoException) => e.code === 'ENAMETOOLONG');
    assert.throws(() => addon.sdNotify('', 'READY=1'), (e: NodeJS.ErrnoException) => e.code === 'ENOENT');
  } finally {
    dir.remove();
  }
});

test.run();
