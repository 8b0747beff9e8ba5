// Admission of unauthenticated connections: a pure policy over counts and a rolling minute.
//
// Ordinary peers get at most `maxUnauthenticated` concurrent slots and `maxAdmissionsPerMinute`
// admissions in any rolling 60 s. One more slot, exempt from the rate, is kept for the client
// service's real MainPID, so a flood from other processes of the account cannot lock the agent out.

export interface AdmissionLimits {
  maxUnauthenticated: number;
  maxAdmissionsPerMinute: number;
}

export type Slot = 'ordinary' | 'reserved' | 'root';

/** Root's connections at once (the operator's LIST, ATTACH, STOP_SESSION: principals.ts), apart from
 * the client account's: a flood of the account cannot lock the operator out, nor the reverse. */
export const MAX_ROOT_CONNECTIONS = 4;
export type AdmissionRefusal = 'unauthenticated-limit' | 'rate-limit';
export type AdmissionResult = { admitted: true; slot: Slot } | { admitted: false; reason: AdmissionRefusal };

const MINUTE_MS = 60_000;

export class Admission {
  #limits: AdmissionLimits;
  #ordinary = 0;
  #reservedTaken = false;
  #root = 0;
  /** Times of ordinary admissions in the last minute, oldest first; never longer than the rate. */
  #recent: number[] = [];

  constructor(limits: AdmissionLimits) {
    this.#limits = limits;
  }

  /** Decides and takes a slot in one synchronous step, so concurrent callers cannot overshoot. */
  admit(likelyMainPid: boolean, now: number): AdmissionResult {
    this.#forget(now);
    const ordinaryFree = this.#ordinary < this.#limits.maxUnauthenticated;
    const rateFree = this.#recent.length < this.#limits.maxAdmissionsPerMinute;
    if (ordinaryFree && rateFree) {
      this.#ordinary += 1;
      this.#recent.push(now);
      return { admitted: true, slot: 'ordinary' };
    }
    if (likelyMainPid && !this.#reservedTaken) {
      this.#reservedTaken = true;
      return { admitted: true, slot: 'reserved' };
    }
    return { admitted: false, reason: ordinaryFree ? 'rate-limit' : 'unauthenticated-limit' };
  }

  /** Root's own admission: at most MAX_ROOT_CONNECTIONS at once, no rate. */
  admitRoot(): AdmissionResult {
    if (this.#root >= MAX_ROOT_CONNECTIONS) return { admitted: false, reason: 'unauthenticated-limit' };
    this.#root += 1;
    return { admitted: true, slot: 'root' };
  }

  release(slot: Slot): void {
    if (slot === 'root') this.#root = Math.max(0, this.#root - 1);
    else if (slot === 'reserved') this.#reservedTaken = false;
    else if (this.#ordinary > 0) this.#ordinary -= 1;
  }

  /**
   * Gives back the rate token of an ordinary admission made at or after `since` (its accept): the
   * request turned out to be the agent's own (its MainPID's) or root's kept-session request, which
   * must not spend the minute's admissions its tools need to START (docs/security.md "The agent must
   * never be locked out"). The token taken first from `since` on is given back: this one's, or one
   * taken between its accept and its admission, equal but for those few milliseconds.
   */
  refund(slot: Slot, since: number): void {
    if (slot !== 'ordinary') return;
    const at = this.#recent.findIndex((time) => time >= since);
    if (at >= 0) this.#recent.splice(at, 1);
  }

  /** Whether an ordinary slot and a rate token are free now: if so, nobody needs to ask whether a
   * peer is the MainPID (the reserved slot is only for when they are not). */
  ordinaryAvailable(now: number): boolean {
    this.#forget(now);
    return this.#ordinary < this.#limits.maxUnauthenticated && this.#recent.length < this.#limits.maxAdmissionsPerMinute;
  }

  /** Whether the reserved slot is free (a MainPID lookup can only help then). */
  get reservedFree(): boolean {
    return !this.#reservedTaken;
  }

  get unauthenticated(): number {
    return this.#ordinary + (this.#reservedTaken ? 1 : 0);
  }

  #forget(now: number): void {
    let drop = 0;
    while (drop < this.#recent.length && this.#recent[drop]! <= now - MINUTE_MS) drop += 1;
    if (drop) this.#recent.splice(0, drop);
  }
}
