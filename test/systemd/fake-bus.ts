// A scripted D-Bus peer on a Unix socket: enough of the SASL handshake and message framing to drive
// DbusConnection through fd refusal, silence, errors, signals and a dropped connection.
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import dbus from 'dbus-next';
import { passRights } from '../../src/io/pass-rights.ts';

const require = createRequire(import.meta.url);
// dbus-next's own marshaller builds the replies, so the fake speaks exactly what the client parses.
const { marshallMessage } = require('dbus-next/lib/marshall-compat') as {
  marshallMessage(message: InstanceType<typeof dbus.Message>): [Buffer, number[]];
};

export const SYSTEMD_OWNER = ':1.0';
const CLIENT_NAME = ':1.7';

export interface FakeBusOptions {
  /** Answer NEGOTIATE_UNIX_FD with ERROR instead of AGREE_UNIX_FD. */
  refuseFds?: boolean;
  /** Answer Hello, then nothing at all. */
  silentAfterHello?: boolean;
  /** Agree to fd passing, then refuse every descriptor in the kernel (SO_PASSRIGHTS off: the sender's sendmsg fails with EPERM). */
  refuseDescriptors?: boolean;
}

export interface ReceivedCall {
  serial: number;
  member: string;
  /** The whole message as latin1, for a reply that depends on the arguments (a property's name). */
  text: string;
}

export class FakeBus {
  readonly address: string;
  readonly calls: ReceivedCall[] = [];
  #dir: string;
  #server: Server;
  #client: Socket | undefined;
  #serial = 100;
  #options: FakeBusOptions;
  /** Replies by member name; a member without one is never answered. */
  replies = new Map<string, (call: ReceivedCall) => InstanceType<typeof dbus.Message>>();

  private constructor(dir: string, server: Server, options: FakeBusOptions) {
    this.#dir = dir;
    this.#server = server;
    this.#options = options;
    this.address = `unix:path=${join(dir, 'bus')}`;
    this.replies.set('Hello', (call) => this.methodReturn(call, 's', [CLIENT_NAME]));
    if (!options.silentAfterHello) {
      this.replies.set('AddMatch', (call) => this.methodReturn(call));
      this.replies.set('GetNameOwner', (call) => this.methodReturn(call, 's', [SYSTEMD_OWNER]));
    }
  }

  static async start(options: FakeBusOptions = {}): Promise<FakeBus> {
    const dir = mkdtempSync(join(tmpdir(), 'ocp-fake-bus-'));
    const server = createServer();
    const bus = new FakeBus(dir, server, options);
    server.on('connection', (socket) => bus.#serve(socket));
    await new Promise<void>((resolve) => server.listen(join(dir, 'bus'), resolve));
    return bus;
  }

  methodReturn(call: ReceivedCall, signature = '', body: unknown[] = []): InstanceType<typeof dbus.Message> {
    return new dbus.Message({
      type: dbus.MessageType.METHOD_RETURN,
      serial: this.#serial++,
      replySerial: call.serial as unknown as string,
      destination: CLIENT_NAME,
      sender: SYSTEMD_OWNER,
      signature,
      body,
    });
  }

  error(call: ReceivedCall, name: string, text: string): InstanceType<typeof dbus.Message> {
    return new dbus.Message({
      type: dbus.MessageType.ERROR,
      serial: this.#serial++,
      replySerial: call.serial as unknown as string,
      errorName: name,
      destination: CLIENT_NAME,
      sender: SYSTEMD_OWNER,
      signature: 's',
      body: [text],
    });
  }

  /** Sends a signal as if from `sender` (systemd's unique name unless told otherwise). */
  signal(path: string, iface: string, member: string, signature: string, body: unknown[], sender = SYSTEMD_OWNER): void {
    this.send(new dbus.Message({ type: dbus.MessageType.SIGNAL, serial: this.#serial++, path, interface: iface, member, sender, signature, body }));
  }

  send(message: InstanceType<typeof dbus.Message>): void {
    this.#client?.write(marshallMessage(message)[0]);
  }

  /** Drops the client's connection. */
  hangUp(): void {
    this.#client?.destroy();
  }

  async stop(): Promise<void> {
    this.#client?.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
    rmSync(this.#dir, { recursive: true, force: true });
  }

  /** Whether refuseDescriptors took effect (a kernel before 6.16 has no SO_PASSRIGHTS). */
  refusing = false;

  #serve(socket: Socket): void {
    this.#client = socket;
    if (this.#options.refuseDescriptors) this.refusing = passRights((socket as unknown as { _handle: { fd: number } })._handle.fd, false);
    let buffer = Buffer.alloc(0);
    let authenticated = false;
    socket.on('error', () => undefined);
    socket.on('data', (chunk) => {
      buffer = Buffer.concat([buffer, chunk]);
      while (!authenticated) {
        const end = buffer.indexOf('\r\n');
        if (end < 0) return;
        const line = buffer.subarray(0, end).toString('latin1').replace(/^\0/, '');
        buffer = buffer.subarray(end + 2);
        if (line.startsWith('AUTH ')) socket.write('OK 0123456789abcdef0123456789abcdef\r\n');
        else if (line === 'NEGOTIATE_UNIX_FD') socket.write(this.#options.refuseFds ? 'ERROR\r\n' : 'AGREE_UNIX_FD\r\n');
        else if (line === 'BEGIN') authenticated = true;
      }
      // Messages: 16-byte header (little-endian from dbus-next), header fields padded to 8, body.
      while (buffer.length >= 16) {
        const fieldsLength = buffer.readUInt32LE(12);
        const total = 16 + Math.ceil(fieldsLength / 8) * 8 + buffer.readUInt32LE(4);
        if (buffer.length < total) return;
        const message = buffer.subarray(0, total);
        buffer = buffer.subarray(total);
        // The member is the header field of code 3 (a string); a substring search is enough for a fake.
        const text = message.toString('latin1');
        const member = ['Hello', 'AddMatch', 'GetNameOwner', ...this.replies.keys()].find((name) => text.includes(`\0${name}\0`)) ?? '?';
        const call = { serial: message.readUInt32LE(8), member, text };
        this.calls.push(call);
        const reply = this.replies.get(member);
        if (reply) this.send(reply(call));
      }
    });
  }
}
