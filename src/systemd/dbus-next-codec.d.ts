// Types for internal modules of dbus-next 0.10.2: the two that warmUpCodec() drives (its connection
// uses them the same way, lib/connection.js); dbus-next publishes no typings for them.
declare module 'dbus-next/lib/marshall-compat.js' {
  import type { Message } from 'dbus-next';
  export function marshallMessage(message: Message): [Buffer, number[]];
  export function messageToJsFmt(message: unknown): Message;
}

declare module 'dbus-next/lib/message.js' {
  export function unmarshall(buffer: Buffer): unknown;
}

// The pieces of dbus-next's connection that bus-wire.ts assembles around our own socket (lib/connection.js).
declare module 'dbus-next/lib/message.js' {
  export function unmarshalMessages(stream: { on(event: "readable", listener: () => void): unknown; read(size: number, fdCount?: null): unknown }, onMessage: (message: unknown) => void, options: object): void;
}

declare module 'dbus-next/lib/handshake.js' {
  export default function clientHandshake(stream: import("node:stream").Duplex, options: { negotiateUnixFd?: boolean }, done: (error: Error | null, guid: string) => void): void;
}

declare module 'dbus-next/lib/message-type.js' {
  import type { Message } from 'dbus-next';
  const messageType: { Message: new (fields: Message) => Message };
  export default messageType;
}

declare module 'dbus-next/lib/bus.js' {
  import type { MessageBus } from 'dbus-next';
  const MessageBusClass: new (connection: object) => MessageBus;
  export default MessageBusClass;
}
