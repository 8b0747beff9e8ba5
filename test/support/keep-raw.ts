// Kept-session probes by hand on the wire (protocol version 3), for the review of issue 29: a kept START
// whose connection closes the moment it is sent, and an ATTACH connection that then offers a descriptor.
import { closeSync, constants, fstatSync, openSync } from 'node:fs';
import { FdSocket } from '../../src/io/fd-socket.ts';
import { native } from '../../src/native/binding.ts';
import { FrameDecoder, KEEP_VERSION, Limits, encodeFrame, type Frame } from '../../src/protocol/index.ts';

export interface RawKeepAnswer {
  frames?: string[];
  error?: string;
  message?: string;
  /** The errno of a sendmsg that carried a descriptor after ATTACHED ('' when the kernel took it). */
  sendFd?: string;
}

/** HELLO offering version 3 only, then frames until `type` (or the end, or 8 s). */
async function welcomed(path: string): Promise<{ socket: FdSocket; frames: Frame[]; until(type: Frame['type']): Promise<Frame | undefined> }> {
  const socket = new FdSocket(native().connectUnix(path));
  socket.on('error', () => undefined);
  const decoder = new FrameDecoder('to-client', KEEP_VERSION);
  const frames: Frame[] = [];
  let wake = () => undefined as void;
  let ended = false;
  socket.startReading((chunk) => {
    for (const frame of decoder.push(chunk)) frames.push(frame);
    wake();
  });
  socket.on('end', () => ((ended = true), wake()));
  const until = async (type: Frame['type']) => {
    const bound = Date.now() + 8000;
    for (;;) {
      const found = frames.find((frame) => frame.type === type || frame.type === 'error');
      if (found || ended || Date.now() > bound) return found;
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, 50);
      });
    }
  };
  socket.write(encodeFrame({ type: 'hello', minVersion: KEEP_VERSION, maxVersion: KEEP_VERSION }, KEEP_VERSION));
  await until('welcome');
  return { socket, frames, until };
}

/** A kept START, its connection closed right after it is sent: before STARTED, long before the worker sees the start through. */
export async function rawStartThenClose(path: string, cwd: string, argv: string[], keepMs: number, label: string): Promise<RawKeepAnswer> {
  const { socket, frames } = await welcomed(path);
  const dirFd = openSync(cwd, constants.O_RDONLY | constants.O_DIRECTORY);
  const stat = fstatSync(dirFd, { bigint: true });
  socket.write(encodeFrame({ type: 'start', rows: 24, cols: 80, cwdDev: stat.dev, cwdIno: stat.ino, argv, env: [], keepMs, retainBytes: 0, label }, KEEP_VERSION), [dirFd]);
  await new Promise<void>((resolve) => (socket.writableLength === 0 ? resolve() : socket.once('drain', resolve)));
  socket.close();
  return { frames: frames.map((frame) => frame.type) };
}

/** ATTACH (observe, from now), then a CREDIT frame carrying a pipe's descriptor: the kernel's answer to that sendmsg. */
export async function rawAttachThenFd(path: string, id: number): Promise<RawKeepAnswer> {
  const { socket, frames, until } = await welcomed(path);
  socket.write(encodeFrame({ type: 'attach', id, fromOffset: Limits.FROM_NOW, role: 2, rows: 24, cols: 80 }, KEEP_VERSION));
  const attached = await until('attached');
  if (attached?.type !== 'attached') {
    socket.close();
    return { frames: frames.map((frame) => frame.type), error: attached?.type === 'error' ? `${attached.code}: ${attached.message}` : 'no ATTACHED' };
  }
  const file = openSync('/dev/null', constants.O_RDONLY);
  const credit = encodeFrame({ type: 'credit', bytes: 1 }, KEEP_VERSION);
  let sendFd = '';
  try {
    native().sendmsg(socket.fd, credit, 0, credit.length, [file]);
  } catch (error) {
    sendFd = (error as { code?: string }).code ?? String(error);
  }
  try {
    closeSync(file);
  } catch {}
  socket.close();
  return { frames: frames.map((frame) => frame.type), sendFd };
}
