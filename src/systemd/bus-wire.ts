// A dbus-next MessageBus over our BusSocket. dbus-next's own createConnection (lib/connection.js) picks
// its stream itself (usocket, else a plain socket that cannot pass fds); this is the same connection
// (its handshake, its message parser, its marshalling) given the stream we made.
import { EventEmitter } from 'node:events';
import { closeSync } from 'node:fs';
import type { Message, MessageBus } from 'dbus-next';
import MessageBusClass from 'dbus-next/lib/bus.js';
import clientHandshake from 'dbus-next/lib/handshake.js';
import { marshallMessage, messageToJsFmt } from 'dbus-next/lib/marshall-compat.js';
import { unmarshalMessages } from 'dbus-next/lib/message.js';
import MessageClass from 'dbus-next/lib/message-type.js';
import { BusSocket } from './bus-socket.ts';

/** The socket path of a `unix:path=…` address (the only kind the system bus has); undefined for others. */
export function unixPathOf(address: string): string | undefined {
  for (const entry of address.split(';')) {
    const [family, params = ''] = entry.split(/:(.*)/s, 2) as [string, string?];
    if (family !== 'unix') continue;
    for (const pair of params.split(',')) {
      const [key, value] = pair.split(/=(.*)/s, 2);
      if (key === 'path' && value) return value;
    }
  }
  return undefined;
}

/**
 * The stream as dbus-next's parser (lib/message.js unmarshalMessages) reads it, made safe for a root
 * process. Any peer on the bus may send us a directed signal, with descriptors: none is ever wanted
 * (systemd sends us none), so every one received is closed at once and the parser sees none, and a
 * message it then cannot decode (an 'h' with no descriptor, or a body it rejects) is dropped here: its
 * throw would otherwise escape the 'readable' event and end the process. The parser has reset to the
 * next message's header before it decodes a body, so the stream stays in step.
 */
function parserView(stream: BusSocket): { on(event: 'readable', listener: () => void): void; read(size: number, fdCount?: null): unknown } {
  return {
    on: (event, listener) =>
      void stream.on(event, () => {
        try {
          listener();
        } catch {
          // Dropped: a message we cannot decode is no reply or signal we wait for.
          setImmediate(() => stream.emit('readable'));
        }
      }),
    read: (size, fdCount) => {
      if (fdCount === undefined) return stream.read(size);
      const read = stream.read(size, null) as { data: Buffer | null; fds: number[] } | null;
      if (!read) return read;
      for (const fd of read.fds) {
        try {
          closeSync(fd);
        } catch {}
      }
      return read.data ? { data: read.data, fds: [] } : null;
    },
  };
}

/** Connects to the bus at `address` with fd passing negotiated (lib/connection.js createConnection). */
export function openMessageBus(address: string): MessageBus {
  const path = unixPathOf(address);
  if (!path) throw new Error(`unsupported D-Bus address ${JSON.stringify(address)} (only unix:path=…)`);
  const stream = new BusSocket(path);
  const connection = Object.assign(new EventEmitter(), { stream, state: 'connecting', guid: '', message: (_message: Message) => {} });
  const queued: Message[] = [];
  const send = (message: Message): void => {
    const [data, fds] = marshallMessage(message);
    stream.write(stream.supportsUnixFd ? { data, fds } : data);
  };
  connection.message = (message) => void queued.push(message);
  stream.on('error', (error) => connection.emit('error', error));
  stream.on('end', () => {
    connection.emit('end');
    connection.message = () => void connection.emit('error', new Error('Tried to write a message to a closed stream'));
  });
  Object.assign(connection, { end: () => (stream.end(), connection) });
  stream.once('connected', () =>
    clientHandshake(stream, { negotiateUnixFd: true }, (error: Error | null, guid: string) => {
      if (error) return void connection.emit('error', error);
      connection.guid = guid;
      connection.emit('connect');
      unmarshalMessages(
        parserView(stream),
        (raw: unknown) => {
          let message: Message;
          try {
            message = new MessageClass.Message(messageToJsFmt(raw));
          } catch (cause) {
            return void connection.emit('error', cause);
          }
          connection.emit('message', message);
        },
        {},
      );
    }),
  );
  connection.once('connect', () => {
    connection.state = 'connected';
    for (const message of queued.splice(0)) send(message);
    connection.message = (message) => {
      if (!stream.writable) throw new Error('Cannot send message, stream is closed');
      send(message);
    };
  });
  return new MessageBusClass(connection) as MessageBus;
}
