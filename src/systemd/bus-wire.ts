// A dbus-next MessageBus over our BusSocket. dbus-next's own createConnection (lib/connection.js) picks
// its stream itself (usocket, else a plain socket that cannot pass fds); this is the same connection
// (its handshake, its message parser, its marshalling) given the stream we made.
import { EventEmitter } from 'node:events';
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
        stream,
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
