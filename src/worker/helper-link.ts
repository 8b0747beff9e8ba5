// The worker's end of the control channel to its session helper: commands out, untrusted messages in.
// Read with recvmsg on our own watcher (never libuv's read, which would drop a stray fd unseen), and
// readable to EAGAIN on demand: once the unit is inactive, what is not there now will never come.
import { native, type FdWatcher } from '../native/index.ts';
import { closeQuietly, closeReceived, closePeer, passRights } from '../io/index.ts';
import { HelperChannelError, HelperDecoder, HelperLimits, encodeAttach, encodeCommand, encodeGo, encodeQuery, encodeRendezvous, type AttachRoleName, type HelperMessage, type KeptOptions } from '../control/index.ts';
import { ErrorCode, SessionError } from '../protocol/index.ts';

export interface HelperLinkEvents {
  message(message: HelperMessage): void;
  /** The helper broke the channel's rules (a protocol fault of the helper's); nothing more is read from it. */
  failed(error: Error): void;
}

/**
 * A new control channel for a session's helper: our end as a link, the helper's end (the unit's stderr)
 * for the caller, and ENV then GO (with `started`) queued before the unit exists, so the helper reads
 * them the moment it runs. The empty 128 KiB buffer takes both whole; if not, nothing has started yet
 * and the start fails (INTERNAL), both ends closed.
 */
export function openHelperLink(envMessage: Buffer, started: Buffer, events: HelperLinkEvents, kept?: KeptOptions, hold = false): { link: HelperLink; helperEnd: number } {
  const [workerEnd, helperEnd] = native().socketpair();
  // The helper never sends a descriptor: the kernel refuses any it tries.
  passRights(workerEnd, false);
  const link = new HelperLink(workerEnd, events, kept);
  // `hold`: ENV and GO wait for releaseStart(), once the started unit's guarantees are confirmed.
  if (hold) link.holdStart(envMessage, started);
  else if (!link.sendEnv(envMessage) || !link.sendGo(started)) {
    link.close();
    closeQuietly(helperEnd);
    throw new SessionError(ErrorCode.INTERNAL, 'the session helper cannot be reached');
  }
  return { link, helperEnd };
}

export class HelperLink {
  #fd: number;
  #events: HelperLinkEvents;
  #watcher: FdWatcher | undefined;
  #decoder: HelperDecoder;
  #buffer = Buffer.allocUnsafe(64 * 1024);
  #done = false;
  #logs = 0;
  #held: [env: Buffer, started: Buffer] | undefined;

  /** Takes ownership of `fd`, the worker's end of the control socketpair. `kept`: a kept session's
   * helper (dialect 3), whose DETACHED, STATE and PROGRAM_ENDED are checked against what we sent. */
  constructor(fd: number, events: HelperLinkEvents, kept?: KeptOptions) {
    this.#fd = fd;
    this.#events = events;
    this.#decoder = new HelperDecoder(kept ? { kept } : {});
  }

  /** ATTACH `conn` with the connection's descriptor riding on its first byte (the helper gets its own
   * copy; ours stays ours). False when it did not go whole: the caller refuses that connection. */
  sendAttach(attach: { conn: number; role: AttachRoleName; fromOffset: bigint; rows: number; cols: number }, connectionFd: number): boolean {
    if (this.#fd < 0 || this.#done) return false;
    const message = encodeAttach(attach);
    try {
      if (native().sendmsg(this.#fd, message, 0, message.length, [connectionFd]) !== message.length) return false;
    } catch {
      return false;
    }
    this.#decoder.attached(attach.conn);
    return true;
  }

  /** RENDEZVOUS (dialect 4) with the listening socket root bound for this kept session, queued behind GO:
   * from then on the helper outlives this channel. False when it did not go whole. */
  sendRendezvous(listenFd: number, cgroup: string): boolean {
    if (this.#fd < 0 || this.#done) return false;
    const message = encodeRendezvous(cgroup);
    try {
      return native().sendmsg(this.#fd, message, 0, message.length, [listenFd]) === message.length;
    } catch {
      return false;
    }
  }

  /** The helper's dialect, once its HELLO has come (1 until then, or for a helper that sends none). */
  get dialect(): number {
    return this.#decoder.dialect;
  }

  /** QUERY: one STATE answers it. False when it could not go (the channel is gone, or too many are unanswered). */
  sendQuery(): boolean {
    if (this.#fd < 0 || this.#done) return false;
    try {
      this.#decoder.queried();
    } catch {
      return false;
    }
    return this.#write(encodeQuery());
  }

  start(): void {
    if (this.#done || this.#watcher) return;
    this.#watcher = native().watch(this.#fd, { readable: true }, () => this.readAvailable());
  }

  /** Commands are 5 bytes into a socket buffer of 128 KiB that the helper drains: false if not sent. */
  send(command: 'terminate' | 'kill'): boolean {
    return this.#write(encodeCommand(command));
  }

  /** ENV and GO kept back until releaseStart(): the helper waits for ENV before it forks the program. */
  holdStart(envMessage: Buffer, started: Buffer): void {
    this.#held = [envMessage, started];
  }

  /** Sends the held ENV and GO; false when they did not go whole (the start then fails). */
  releaseStart(): boolean {
    const held = this.#held;
    this.#held = undefined;
    return held !== undefined && this.sendEnv(held[0]) && this.sendGo(held[1]);
  }

  /** The program's environment (encodeEnv's message), the first one: at most 5 + 64 KiB into the
   * empty 128 KiB buffer, so one send takes it whole. */
  sendEnv(message: Buffer): boolean {
    return this.#write(message);
  }

  /** GO with the STARTED frame, right after ENV and before the unit starts: ENV's entries and STARTED's
   * dropped names are START's environment split in two, so both fit the empty buffer at once. */
  sendGo(started: Buffer): boolean {
    return this.#write(encodeGo(started));
  }

  #write(frame: Buffer): boolean {
    if (this.#fd < 0) return false;
    try {
      return native().sendmsg(this.#fd, frame, 0, frame.length) === frame.length;
    } catch {
      return false;
    }
  }

  /** Bytes of the channel read before this link held it (an adopted helper's HELLO), taken as if read here. */
  preface(bytes: Buffer): void {
    if (!this.#done) this.#take(bytes);
  }

  /** Reads until the kernel has nothing more (EAGAIN) or the channel ends. */
  readAvailable(): void {
    while (!this.#done && this.#fd >= 0) {
      let received;
      try {
        received = native().recvmsg(this.#fd, this.#buffer, 0, this.#buffer.length, 1);
      } catch {
        return this.#stop();
      }
      if (received === null) return;
      if (received.fds.length > 0 || received.controlTruncated || received.foreignControl) {
        closeReceived(received.fds);
        return this.#fail(new HelperChannelError('the session helper sent a descriptor'));
      }
      if (received.bytes === 0) return this.#stop();
      this.#take(Buffer.from(this.#buffer.subarray(0, received.bytes)));
    }
  }

  #take(bytes: Buffer): void {
    const { messages, fault } = this.#decoder.push(bytes);
    // What came whole before a fault is acted on first: an END report followed by junk is still the report.
    for (const message of messages) {
      // A message may close the link (a HELLO of another dialect, session-keep.ts): the rest is not acted on.
      if (this.#done) return;
      // The helper sends at most MAX_LOGS (control.c say()); more is a flood into root's journal.
      if (message.type === 'log' && ++this.#logs > HelperLimits.MAX_LOGS) {
        return this.#fail(new HelperChannelError(`more than ${HelperLimits.MAX_LOGS} LOG messages`));
      }
      this.#events.message(message);
    }
    if (fault && !this.#done) this.#fail(fault);
  }

  /** Reads away what the helper left queued (its descriptors included: peer-close.ts), then closes. */
  close(): void {
    this.#stop();
    if (this.#fd >= 0) closePeer(this.#fd);
    this.#fd = -1;
  }

  /** The helper sent something it never sends: whatever runs it is not our helper any more (the
   * session's state records it, session-state.ts `helper-lost`). */
  #fail(error: Error): void {
    this.#stop();
    this.#events.failed(error);
  }

  /** EOF (or an error): level-triggered, so the watcher must go. */
  #stop(): void {
    this.#done = true;
    this.#watcher?.close();
    this.#watcher = undefined;
  }
}
