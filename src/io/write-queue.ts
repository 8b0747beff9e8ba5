// The outgoing byte queue of one socket: whole writes in order, urgent frames ahead of unstarted data, fds owned until sent.

interface Entry {
  data: Buffer;
  offset: number;
  /** Descriptors to attach to the first sendmsg of this entry; owned by the queue until sent. */
  fds: number[];
  urgent: boolean;
}

export interface Chunk {
  data: Buffer;
  offset: number;
  /** Non-empty only when nothing of this entry has been sent yet. */
  fds: number[];
}

export class WriteQueue {
  #entries: Entry[] = [];
  #bytes = 0;

  /** Bytes queued and not yet accepted by the kernel. */
  get bytes(): number {
    return this.#bytes;
  }

  get isEmpty(): boolean {
    return this.#entries.length === 0;
  }

  /** Appends one write; it is a unit that urgent frames never split. */
  push(data: Buffer, fds: number[] = []): void {
    this.#entries.push({ data, offset: 0, fds, urgent: false });
    this.#bytes += data.length;
  }

  /** Puts a complete frame before every entry not yet started, after urgent frames already waiting
   * (they keep their order) and after a partly sent entry (its bytes must stay contiguous on the wire). */
  pushUrgent(data: Buffer): void {
    let index = 0;
    if (this.#entries[0] && this.#entries[0].offset > 0) index = 1;
    while (this.#entries[index]?.urgent) index += 1;
    this.#entries.splice(index, 0, { data, offset: 0, fds: [], urgent: true });
    this.#bytes += data.length;
  }

  peek(): Chunk | undefined {
    const head = this.#entries[0];
    if (!head) return undefined;
    return { data: head.data, offset: head.offset, fds: head.offset === 0 ? head.fds : [] };
  }

  /** Records that the kernel took `sent` bytes of the head; returns the fds that went with them (the
   * kernel holds its own references now, so the caller closes these copies). */
  consume(sent: number): number[] {
    const head = this.#entries[0];
    if (!head || sent <= 0) return [];
    const fds = head.offset === 0 ? head.fds : [];
    head.fds = [];
    head.offset += sent;
    this.#bytes -= sent;
    if (head.offset >= head.data.length) this.#entries.shift();
    return fds;
  }

  /** Drops every entry not yet started (a partly sent head stays: its bytes must stay contiguous on
   * the wire); returns their descriptors for the caller to close. */
  discardUnstarted(): number[] {
    const keep = this.#entries[0] && this.#entries[0].offset > 0 ? [this.#entries[0]] : [];
    const dropped = this.#entries.slice(keep.length);
    this.#entries = keep;
    this.#bytes = keep.reduce((sum, entry) => sum + entry.data.length - entry.offset, 0);
    return dropped.flatMap((entry) => entry.fds);
  }

  /** Drops everything; returns the descriptors never sent, for the caller to close. */
  clear(): number[] {
    const fds = this.#entries.flatMap((entry) => entry.fds);
    this.#entries = [];
    this.#bytes = 0;
    return fds;
  }
}
