// The D-Bus socket with fd passing, on our own Node-API addon: the stream dbus-next's connection expects
// from its optional `usocket` (a NAN addon, built for one Node ABI: under another Node it failed to load
// and dbus-next fell back silently to a plain socket, which cannot carry the fds a unit start needs).
// The same surface as usocket's USocket (usocket 1.1.0 index.js), as far as dbus-next uses it
// (lib/connection.js, lib/message.js, lib/handshake.js): 'connected' once connected, `supportsUnixFd`,
// writes of strings, Buffers or `{ data, fds }`, and `read(size, null)` handing back `{ data, fds }` with
// every descriptor received so far. libuv would drop received descriptors (it reads with read()), so
// the socket is read with recvmsg on a native watcher, as src/io/fd-socket.ts does for peers.
import { closeSync } from 'node:fs';
import { Duplex } from 'node:stream';
import { type FdWatcher, native, type PollEvents } from '../native/index.ts';

/** One read's buffer: a D-Bus message is at most 128 MiB, but replies from systemd are small. */
const READ_BUFFER_BYTES = 64 * 1024;
/** The most descriptors one message may carry (the kernel's SCM_MAX_FD). */
const MAX_FDS = 253;

type Chunk = string | Buffer | { data?: Buffer; fds?: number[] };

export class BusSocket extends Duplex {
  /** Read by dbus-next's handshake to ask for fd passing (NEGOTIATE_UNIX_FD); it clears it when the bus refuses. */
  supportsUnixFd = true;
  #fd = -1;
  #watcher: FdWatcher | undefined;
  #reading = true;
  /** A write the kernel could not take whole: the rest, sent when the socket is writable again. */
  #blocked: { data: Buffer; fds: number[] | undefined; done: (error?: Error | null) => void } | undefined;
  /** Descriptors received and not yet taken by read(size, null). */
  #fds: number[] = [];
  /** Copies of the descriptors of writes not yet sent (write() makes them): closed when sent or at destroy. */
  #owned = new Set<number>();
  #scratch = Buffer.allocUnsafe(READ_BUFFER_BYTES);

  /** Connects to `path` (a Unix stream socket) at once; 'connected' follows on the next tick, or 'error'. */
  constructor(path: string) {
    super({ writableObjectMode: true, allowHalfOpen: false });
    try {
      this.#fd = native().connectUnix(path);
    } catch (error) {
      process.nextTick(() => this.destroy(error as Error));
      return;
    }
    this.#watcher = native().watch(this.#fd, { readable: true }, (events) => this.#onEvents(events));
    process.nextTick(() => this.emit('connected'));
  }

  /** With `fdCount` (null: all queued), `{ data, fds }` as usocket gives; without it, a plain read. */
  override read(size?: number, fdCount?: number | null): any {
    if (fdCount === undefined) return super.read(size);
    const data = super.read(size) as Buffer | null;
    if (size && !data) return data;
    return { data, fds: this.#fds.splice(0, fdCount === null ? this.#fds.length : fdCount) };
  }

  override write(chunk: Chunk, encoding?: BufferEncoding | ((error?: Error | null) => void), done?: (error?: Error | null) => void): boolean {
    let object = typeof chunk === 'string' ? { data: Buffer.from(chunk) } : Buffer.isBuffer(chunk) ? { data: chunk } : chunk;
    // A write may wait (a full socket, writes queued before it) past the caller's interest: a call's
    // timeout closes its descriptors, and a number closed then reused would hand PID 1 another file
    // (a client's socket, another session's directory). The write owns copies made now, closed once sent.
    if (object.fds?.length && !this.destroyed && !this.writableEnded) object = { data: object.data, fds: this.#own(object.fds) };
    return typeof encoding === 'function' ? super.write(object, encoding) : super.write(object, done);
  }

  override _read(): void {
    if (this.#reading) return;
    this.#reading = true;
    this.#updateInterest();
  }

  override _write(chunk: { data?: Buffer; fds?: number[] }, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    const data = chunk.data ?? Buffer.alloc(0);
    const fds = chunk.fds?.length ? chunk.fds : undefined;
    // Descriptors ride on at least one byte; D-Bus messages are never empty.
    if (fds && data.length === 0) return done(new Error('descriptors need at least one byte to ride on'));
    this.#send(data, fds, done);
  }

  override _final(done: (error?: Error | null) => void): void {
    try {
      if (this.#fd >= 0) native().shutdown(this.#fd, 'write');
      done();
    } catch (error) {
      done(error as Error);
    }
  }

  override _destroy(error: Error | null, done: (error?: Error | null) => void): void {
    // The watcher stops before its fd closes: a later fd with the same number must not be polled.
    this.#watcher?.close();
    this.#watcher = undefined;
    for (const fd of [this.#fd, ...this.#fds.splice(0)]) {
      if (fd < 0) continue;
      try {
        closeSync(fd);
      } catch {}
    }
    this.#fd = -1;
    this.#release([...this.#owned]);
    const blocked = this.#blocked;
    this.#blocked = undefined;
    blocked?.done(error ?? new Error('D-Bus socket closed'));
    done(error);
  }

  /** Copies of `fds` this stream owns until they are sent or it is destroyed. */
  #own(fds: readonly number[]): number[] {
    const copies: number[] = [];
    try {
      for (const fd of fds) {
        copies.push(native().dupCloexec(fd));
        this.#owned.add(copies.at(-1)!);
      }
    } catch (error) {
      this.#release(copies);
      throw error;
    }
    return copies;
  }

  #release(fds: readonly number[] | undefined): void {
    for (const fd of fds ?? []) {
      if (!this.#owned.delete(fd)) continue;
      try {
        closeSync(fd);
      } catch {}
    }
  }

  #send(data: Buffer, fds: number[] | undefined, done: (error?: Error | null) => void): void {
    let sent: number;
    try {
      sent = native().sendmsg(this.#fd, data, 0, data.length, fds);
    } catch (error) {
      this.#release(fds);
      return done(error as Error);
    }
    // The kernel holds its own references from the first byte sent: ours are no longer needed.
    if (sent >= 0) this.#release(fds);
    if (sent === data.length) return done();
    // The rest waits for writable; descriptors went with the first byte sent, or wait with the rest.
    this.#blocked = sent < 0 ? { data, fds, done } : { data: data.subarray(sent), fds: undefined, done };
    this.#updateInterest();
  }

  #onEvents(events: PollEvents): void {
    if (events.error && events.status < 0) {
      this.destroy(Object.assign(new Error(`poll failed: errno ${-events.status}`), { errno: -events.status, syscall: 'poll' }));
      return;
    }
    if (events.writable && this.#blocked) {
      const { data, fds, done } = this.#blocked;
      this.#blocked = undefined;
      this.#send(data, fds, done);
    }
    if (events.readable || events.hangup || events.error) this.#readAvailable();
  }

  /** Reads what the kernel holds (level-triggered: what is left comes on the next event). */
  #readAvailable(): void {
    for (let i = 0; i < 16 && this.#reading && this.#fd >= 0; i++) {
      let received;
      try {
        received = native().recvmsg(this.#fd, this.#scratch, 0, this.#scratch.length, MAX_FDS);
      } catch (error) {
        this.destroy(error as Error);
        return;
      }
      if (received === null) return;
      this.#fds.push(...received.fds);
      if (received.bytes === 0) {
        this.#reading = false;
        this.#updateInterest();
        this.push(null);
        return;
      }
      if (!this.push(Buffer.from(this.#scratch.subarray(0, received.bytes)))) {
        this.#reading = false;
        this.#updateInterest();
      }
    }
  }

  #updateInterest(): void {
    this.#watcher?.update({ readable: this.#reading && !this.readableEnded, writable: this.#blocked !== undefined });
  }
}

