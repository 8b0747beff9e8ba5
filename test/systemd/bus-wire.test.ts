// The bus connection on our own socket, against a real dbus-daemon of its own (a private bus in a
// temporary directory): any peer on a bus may send us directed signals carrying descriptors; a root
// process must neither keep them nor fall over on a message it cannot decode.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, openSync, closeSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import dbus, { type MessageBus } from 'dbus-next';
import { openMessageBus, unixPathOf } from '../../src/systemd/bus-wire.ts';

const dir = mkdtempSync(join(tmpdir(), 'ocp-bus-wire-'));
let daemon: ChildProcess | undefined;
test.after(() => {
  daemon?.kill();
  rmSync(dir, { recursive: true, force: true });
});

async function startBus(): Promise<string> {
  const config = join(dir, 'bus.conf');
  writeFileSync(
    config,
    `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN" "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>session</type><listen>unix:path=${join(dir, 'bus')}</listen><auth>EXTERNAL</auth>
<policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy></busconfig>\n`,
  );
  daemon = spawn('dbus-daemon', [`--config-file=${config}`, '--nofork', '--print-address'], { stdio: ['ignore', 'pipe', 'ignore'] });
  const [line] = (await once(daemon.stdout!, 'data')) as [Buffer];
  return line.toString().trim();
}

async function connected(bus: MessageBus): Promise<string> {
  await once(bus, 'connect');
  for (;;) {
    const name = (bus as unknown as { name?: string }).name;
    if (name) return name;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const openFds = (): number => readdirSync('/proc/self/fd').length;

test('unixPathOf: the path of the first unix:path= entry', () => {
  assert.is(unixPathOf('tcp:host=x;unix:path=/run/dbus/system_bus_socket,guid=1'), '/run/dbus/system_bus_socket');
  assert.is(unixPathOf('unix:abstract=x'), undefined);
});

test('directed signals carrying descriptors, many at once: none is kept, nothing throws, and the connection still answers', async () => {
  const address = await startBus();
  const victim = openMessageBus(address);
  const name = await connected(victim);
  const attacker = openMessageBus(address);
  await connected(attacker);
  const before = openFds();
  const file = openSync('/dev/null', 'r');
  for (let i = 0; i < 50; i++) {
    attacker.send(new dbus.Message({ type: dbus.MessageType.SIGNAL, destination: name, path: '/x', interface: 'x.y', member: 'Z', signature: 'h', body: [file] }));
  }
  closeSync(file);
  // A call of the victim's own, answered after the bus has delivered every signal before it.
  const ping = new dbus.Message({ destination: 'org.freedesktop.DBus', path: '/org/freedesktop/DBus', interface: 'org.freedesktop.DBus', member: 'GetId' });
  const reply = await victim.call(ping);
  assert.type(reply?.body[0], 'string');
  // The attacker's end is flushed when the bus has read it; the signals are all past the victim by its reply.
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.ok(openFds() <= before, `no received descriptor kept (${openFds()} open, ${before} before)`);
  victim.disconnect();
  attacker.disconnect();
});

test.run();
