// A session's version 3 events, typed, and held for the first listener: TRUNCATED may arrive in the same read as
// ATTACHED, before attach() has resolved and anyone could listen (as a stream holds its data until read).
import { EventEmitter } from 'node:events';
import type { SessionRole } from './keep-state.ts';

/** Version 3 events, besides the streams and `exit`. */
export interface SessionEvents {
  /** Bytes this connection asked for are gone (the ring wrapped past them): output goes on from `oldest`.
   * Emitted when the frame arrives, in order with the output pushed before it. */
  truncated: [{ oldest: number; dropped: number }];
  /** Another connection took control (or this one was given it): this connection's role from now on. */
  'controller-changed': [{ generation: number; role: SessionRole }];
}

/** Events held for a first listener, at most, per event: a session nobody listens to keeps the latest few. */
const MAX_HELD_EVENTS = 16;

export interface HeldEventEmitter {
  on<K extends keyof SessionEvents>(event: K, listener: (...args: SessionEvents[K]) => void): this;
  once<K extends keyof SessionEvents>(event: K, listener: (...args: SessionEvents[K]) => void): this;
  off<K extends keyof SessionEvents>(event: K, listener: (...args: SessionEvents[K]) => void): this;
}

export class HeldEventEmitter extends EventEmitter {
  #held: { [K in keyof SessionEvents]?: SessionEvents[K][0][] } = {};

  constructor() {
    super();
    super.on('newListener', (name: keyof SessionEvents) => {
      // newListener runs before the listener is added: hand over once it is.
      if (this.#held[name]?.length) queueMicrotask(() => this.#flush(name));
    });
  }

  /** Emits `event`, or holds it until `name` has a listener. */
  protected emitHeld<K extends keyof SessionEvents>(name: K, event: SessionEvents[K][0]): void {
    if (this.listenerCount(name) > 0) return void this.emit(name, event);
    const held = (this.#held[name] ??= []) as SessionEvents[K][0][];
    if (held.length === MAX_HELD_EVENTS) held.shift();
    held.push(event);
  }

  #flush<K extends keyof SessionEvents>(name: K): void {
    const held = (this.#held[name] ?? []) as SessionEvents[K][0][];
    delete this.#held[name];
    for (const event of held) this.emit(name, event);
  }
}
