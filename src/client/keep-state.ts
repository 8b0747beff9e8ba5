// A version 3 connection's place in a kept session, as pure bookkeeping: its role, the controller generation it
// last heard of, and its output offsets; each frame that changes them is checked against what came before.
import { Role, type FrameOf } from '../protocol/index.ts';
import { ClientError } from './client-error.ts';
import { OutputOffsets } from './offsets.ts';

/** A connection's role in a kept session (version 3): the one controller types, observers only watch. */
export type SessionRole = 'control' | 'observe';

/** What ended the wait for a session: STARTED, or ATTACHED with the offset asked for (FROM_NOW: undefined). */
export type SessionOpening =
  | { frame: FrameOf<'started'>; kept: boolean }
  | { frame: FrameOf<'attached'>; from: number | undefined };

export class KeepState {
  readonly kept: boolean;
  readonly offsets: OutputOffsets;
  #role: SessionRole;
  #generation: number;

  constructor(opening: SessionOpening) {
    if (opening.frame.type === 'started') {
      // The START connection is the controller of generation 1, its output from offset 0.
      this.kept = 'kept' in opening && opening.kept;
      this.#role = 'control';
      this.#generation = 1;
      this.offsets = new OutputOffsets(0);
      return;
    }
    const attached = opening.frame;
    this.kept = true;
    this.#role = roleOf(attached.role);
    this.#generation = attached.generation;
    // Its output starts at the offset asked for, or at `next` for FROM_NOW (docs/protocol.md "Offsets").
    const from = 'from' in opening && opening.from !== undefined ? BigInt(opening.from) : attached.next;
    this.offsets = new OutputOffsets(safe(from, 'ATTACHED offset'));
  }

  get role(): SessionRole {
    return this.#role;
  }

  get generation(): number {
    return this.#generation;
  }

  /** Applies TRUNCATED; throws PROTOCOL when it does not fit the offsets so far. */
  truncate(frame: FrameOf<'truncated'>): { oldest: number; dropped: number } {
    if (!this.kept) throw new ClientError('PROTOCOL', 'the server sent TRUNCATED for a session that is not kept');
    const oldest = safe(frame.oldest, 'TRUNCATED offset');
    // dropped ≤ oldest (the codec checks), so it is exact too.
    const dropped = Number(frame.dropped);
    const wrong = this.offsets.truncate(oldest, dropped);
    if (wrong !== undefined) throw new ClientError('PROTOCOL', wrong);
    return { oldest, dropped };
  }

  /** Applies CONTROLLER_CHANGED (generations only grow); throws PROTOCOL otherwise. */
  changeController(frame: FrameOf<'controller-changed'>): { generation: number; role: SessionRole } {
    if (!this.kept || frame.generation <= this.#generation) {
      throw new ClientError('PROTOCOL', `CONTROLLER_CHANGED to generation ${frame.generation} after ${this.#generation}`);
    }
    this.#generation = frame.generation;
    this.#role = roleOf(frame.role);
    return { generation: this.#generation, role: this.#role };
  }

  /** The error an observer's write, resize, signal or stop gets instead of being sent (the server would close
   * the connection with NOT_CONTROLLER). */
  notController(what: string, id: number | undefined): ClientError {
    return new ClientError(
      'NOT_CONTROLLER',
      `cannot ${what}: this connection observes session ${id} (generation ${this.#generation}); attach with role 'control' to take it over`,
    );
  }
}

function roleOf(code: number): SessionRole {
  return code === Role.CONTROL ? 'control' : 'observe';
}

/** Offsets are below 2^63 (the codec checks); a number holds them exactly below 2^53 only. */
function safe(value: bigint, what: string): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) throw new ClientError('PROTOCOL', `${what} ${value} is beyond 2^53`);
  return Number(value);
}
