// The fd socket layer's door: Unix stream sockets whose descriptors are never lost to libuv, and their closing.
export { FdSocket } from './fd-socket.ts';
export { closeAll, closeQuietly, closeReceived } from './fds.ts';
export { IoError, isPeerGone } from './io-error.ts';
export { passRights } from './pass-rights.ts';
export { closePeer, deferredDrains, drainPeer, refuseAndClose } from './peer-close.ts';
