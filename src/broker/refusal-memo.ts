// What the full checks at accept found about a peer process that was refused, kept by PID while the
// client service's state they were judged against is the latest read (pure). Under a flood from one
// process of the client account, only its first connection per read (about one a second) pays for a
// pidfd and the /proc reads (two thirds of the broker's CPU under a flood from inside the agent's unit,
// measured); the rest are refused from here, with the same code and text the full checks gave.
//
// Only refusals are kept, never an admission: a remembered peer can be refused, never let in, so the
// memo cannot widen what a peer may do. A new read of the service's state forgets everything (the
// MainPID may have changed, or the unit restarted); a PID reused within one read (about a second) would
// need the kernel to cycle through every free PID (pid_max, 4194304 under systemd) in that time.

/** What a remembered peer is: outside the client unit (refused whatever the admission state), or
 * inside it and not its MainPID (refused only while nothing but the MainPID's reserved slot is free). */
export type MemoVerdict = 'outside' | 'inside-not-main';

export interface Remembered {
  verdict: MemoVerdict;
  /** The peer's cgroup: the refusal log's key (refusal-log.ts). */
  cgroup: string;
}

/** PIDs remembered per read; past it a peer is checked in full each time (a flood forking new
 * processes costs it a fork per connection, more than the checks cost the broker). */
export const MAX_REMEMBERED = 1024;

export class RefusalMemo<Epoch> {
  #epoch: Epoch | undefined;
  #peers = new Map<number, Remembered>();
  #max: number;

  constructor(max = MAX_REMEMBERED) {
    this.#max = max;
  }

  /** Remembers `pid` as judged against the read `epoch` (the service snapshot the checks used). */
  remember(pid: number, epoch: Epoch, remembered: Remembered): void {
    this.#turn(epoch);
    if (this.#peers.size >= this.#max && !this.#peers.has(pid)) return;
    this.#peers.set(pid, remembered);
  }

  /** What was found about `pid` against the read `epoch`, the latest one; nothing once a newer read came. */
  recall(pid: number, epoch: Epoch): Remembered | undefined {
    this.#turn(epoch);
    return this.#peers.get(pid);
  }

  get size(): number {
    return this.#peers.size;
  }

  #turn(epoch: Epoch): void {
    if (epoch === this.#epoch) return;
    this.#epoch = epoch;
    this.#peers.clear();
  }
}

/**
 * Whether a connection from a remembered peer is refused from the memo (pure). An outside peer is
 * refused whatever the admission state (the unit check comes before admission); an inside one only
 * while no ordinary slot or rate token is free (then only the MainPID's reserved slot could admit
 * it). The MainPID by the latest read, and anything not remembered, goes through the full checks.
 */
export function refusedFromMemo(remembered: Remembered | undefined, pid: number, ordinaryAvailable: boolean, mainPid: number | undefined): boolean {
  // The MainPID by the latest read always gets the full checks, whatever was remembered.
  if (!remembered || pid === mainPid) return false;
  return remembered.verdict === 'outside' || !ordinaryAvailable;
}
