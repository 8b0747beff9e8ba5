// Types for the two internal modules of dbus-next 0.10.2 that warmUpCodec() drives (its connection
// uses them the same way, lib/connection.js); dbus-next publishes no typings for them.
declare module 'dbus-next/lib/marshall-compat.js' {
  import type { Message } from 'dbus-next';
  export function marshallMessage(message: Message): [Buffer, number[]];
  export function messageToJsFmt(message: unknown): Message;
}

declare module 'dbus-next/lib/message.js' {
  export function unmarshall(buffer: Buffer): unknown;
}
