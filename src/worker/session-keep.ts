// A session's kept part (protocol version 3), beside session.ts: the START's keep plan, the kept side
// once the start is seen through (kept-side.ts), and what the helper and the broker say of it before
// and after. Session owns the state machine; this turns kept-session messages into its events.
import type { BrokerMessage, DescribedEntry, DetachReport, HelperState, KeptFacts } from '../control/index.ts';
import type { FdSocket } from '../io/index.ts';
import type { SessionOriginCode } from '../protocol/index.ts';
import type { HelperLink } from './helper-link.ts';
import type { KeepPlan } from './keep-plan.ts';
import { KeptSide, keptFacts, refuseUnkept, sessionNow } from './kept-side.ts';
import type { SessionState } from './session-state.ts';
import type { Started } from './session-start.ts';

export interface SessionKeepDeps {
  writeTimeoutMs: number;
  /** The state machine's `attach` and `detach` events. */
  attached(): void;
  detached(): void;
  /** The broker's 'kept' report. */
  kept(facts: KeptFacts): void;
  log(line: string): void;
}

export class SessionKeep {
  #deps: SessionKeepDeps;
  #plan: KeepPlan | undefined;
  #side: KeptSide | undefined;
  /** A DETACHED for conn 0 that came before the side (the helper wrote STARTED, then lost the client). */
  #earlyDetached: DetachReport[] = [];

  constructor(deps: SessionKeepDeps) {
    this.#deps = deps;
  }

  /** The kept side, once the start is seen through. */
  get side(): KeptSide | undefined {
    return this.#side;
  }

  /** The broker granted the START's keep. */
  planned(plan: KeepPlan): void {
    this.#plan = plan;
  }

  /** The kept session has started: its START's connection is conn 0, attached; the broker routes its id here. */
  started(started: Started, client: FdSocket, link: HelperLink | undefined, origin: SessionOriginCode): void {
    const { writeTimeoutMs, attached, detached, log } = this.#deps;
    const facts = keptFacts(started, this.#plan!, origin);
    const side = new KeptSide({ facts, link, writeTimeoutMs, attached, detached, log });
    this.#side = side;
    // Counted attached first, then watched: a connection gone already (its hang-up came while the start
    // finished, or the helper's DETACHED did) is a detach after that attach, which arms the deadline.
    attached();
    this.#deps.kept(facts);
    side.connections.add(0, client);
    for (const report of this.#earlyDetached.splice(0)) side.connections.detached(report);
  }

  /** The helper's DETACHED: before the start is seen through only conn 0 can be let go of, held until then. */
  helperDetached(report: DetachReport): void {
    if (this.#side) return this.#side.connections.detached(report);
    if (this.#earlyDetached.length === 0) this.#earlyDetached.push(report);
  }

  helperState(state: HelperState): void {
    this.#side?.stateArrived(state);
  }

  /** A broker message (attach, stop-session, describe), judged against the session's state; the
   * descriptors are taken whatever happens. Before the side exists: SESSION_STATE while a kept START
   * still starts, else NO_SESSION. */
  fromBroker(message: BrokerMessage, fds: number[], state: SessionState, to: { stopSession(): void; described(entry: DescribedEntry): void }): void {
    if (!this.#side) return refuseUnkept(fds, state.kept, this.#deps.writeTimeoutMs);
    this.#side.fromBroker(message, fds, sessionNow(state), to);
  }

  arm(onDeadline: () => void): void {
    this.#side?.arm(onDeadline);
  }

  disarm(): void {
    this.#side?.disarm();
  }

  closeAll(): void {
    this.#side?.closeAll();
  }
}
