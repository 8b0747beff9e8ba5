// Writes a session's last frame ahead of queued data and waits, bounded, until the kernel has it.
import type { FdSocket } from '../io/fd-socket.ts';
import { encodeFrame, type Frame } from '../protocol/index.ts';

export function writeFinalFrame(socket: FdSocket, frame: Frame, timeoutMs: number): Promise<boolean> {
  if (socket.closed) return Promise.resolve(false);
  socket.writeUrgent(encodeFrame(frame));
  if (socket.writableLength === 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (sent: boolean) => {
      clearTimeout(timer);
      socket.off('drain', onDrain);
      socket.off('close', onClose);
      resolve(sent);
    };
    const onDrain = () => done(true);
    const onClose = () => done(false);
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.on('drain', onDrain);
    socket.on('close', onClose);
  });
}
