// A session's kept part (protocol version 3), beside session.ts: the START's keep plan, the kept side
// once the start is seen through (kept-side.ts), and what the helper and the broker say of it before
// and after. Session owns the state machine; this turns kept-session messages into its events.
import { HELPER_DIALECT, KEPT_DIALECT, type BrokerMessage, type DescribedEntry, type DetachReport, type HelperState, type KeptFacts } from '../control/index.ts';
import type { FdSocket } from '../io/index.ts';
import type { SessionOriginCode } from '../protocol/index.ts';
import type { HelperLink } from './helper-link.ts';
import type { KeepPlan } from './keep-plan.ts';
import { KeptSide, keptFacts, refuseUnkept, sessionNow } from './kept-side.ts';
import type { SessionState } from './session-state.ts';
import type { Started } from './session-start.ts';
import { endedRecordOf, type EndedRecord, type KeptRecord, type KeptStore } from '../kept-store/index.ts';
import { sessionIdOf } from '../systemd/index.ts';

export interface SessionKeepDeps {
  writeTimeoutMs: number;
  /** The state machine's `attach` and `detach` events. */
  attached(): void;
  detached(): void;
  /** The broker's 'kept' report. */
  kept(facts: KeptFacts): void;
  /** The broker's 'kept-ended' report. */
  keptEnded?(ended: EndedRecord): void;
  log(line: string): void;
  /** Where the session's record goes (absent: it does not outlive its worker). */
  store?: KeptStore;
  /** Its unit, and the client service its peer was confirmed inside (the record's). */
  unit?(): string | undefined;
  /** The units' prefix (config.unitPrefix), to name a session id after its unit. */
  unitPrefix?: string;
  service?: string;
}

export class SessionKeep {
  #deps: SessionKeepDeps;
  #plan: KeepPlan | undefined;
  #side: KeptSide | undefined;
  /** What root records of the session for the next worker (kept-store/record.ts), once it has started. */
  #record: KeptRecord | undefined;
  /** When the session was adopted through its rendezvous (undefined: started here). */
  #adoptedAt: number | undefined;
  /** An adopted session's first deadline, as its record says (Unix ms); later ones run keepMs from a detach. */
  #adoptedDeadlineAt: number | undefined;
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

  /** The rendezvous is passed, the unit about to be asked for: the first record (its pids unknown yet, 0),
   * so that a supervisor gone before the start is seen through leaves a session the next one adopts. */
  launching(facts: { unit: string; sessionId: number; plan: KeepPlan; program: string; cwd: string; rows: number; cols: number }, origin: SessionOriginCode): void {
    const { unit, sessionId, plan, program, cwd, rows, cols } = facts;
    this.#record = { format: 1, unit, sessionId, keepMs: plan.keepMs, retainBytes: plan.retainBytes, label: plan.label, program, cwd, startedAtMs: Date.now(), rows, cols, programPid: 0, mainPid: 0, origin, service: this.#deps.service ?? null, detachedSinceMs: null };
    this.#save();
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
    const unit = this.#deps.unit?.();
    if (unit) this.#record = { format: 1, unit, ...facts, retainBytes: this.#plan!.retainBytes, service: this.#deps.service ?? null, detachedSinceMs: null };
    this.#save();
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

  /**
   * A session the next broker found running with its record (kept-store): its side holds no connection
   * (the helper let them go with its worker), its deadline is the record's (adoptionDeadline), and the
   * broker learns its facts as after a start ('kept').
   */
  adopted(record: KeptRecord, link: HelperLink, deadlineAt: number): void {
    const { writeTimeoutMs, attached, detached, log } = this.#deps;
    const { format: _format, unit: _unit, retainBytes: _retain, service: _service, detachedSinceMs: _since, ...facts } = record;
    this.#record = { ...record, detachedSinceMs: deadlineAt - record.keepMs };
    this.#adoptedDeadlineAt = deadlineAt;
    this.#adoptedAt = Date.now();
    this.#side = new KeptSide({ facts, link, writeTimeoutMs, attached, detached, log });
    this.#deps.kept(facts);
    this.#save();
  }

  arm(onDeadline: () => void): void {
    const at = this.#adoptedDeadlineAt;
    this.#adoptedDeadlineAt = undefined;
    this.#side?.arm(onDeadline, at);
    if (this.#record) this.#save(at === undefined ? Date.now() : at - this.#record.keepMs);
  }

  disarm(): void {
    this.#side?.disarm();
    this.#save(null);
  }

  /**
   * The worker goes and the session stays (its shutdown, kept-store), if it runs kept with its end not
   * decided: the record says since when nobody is attached, which is now for connections the helper is
   * about to let go. False when there is no record to leave behind: the session then ends as any other.
   */
  releasesAt(state: Pick<SessionState, 'phase' | 'kept' | 'stopping' | 'report'>): boolean {
    if (!state.kept || state.phase !== 'running' || state.stopping || state.report !== undefined) return false;
    if (!this.#record || !this.#side) return false;
    if (this.#record.detachedSinceMs === null) this.#save(Date.now());
    return true;
  }

  /**
   * An adopted helper's dialect (its HELLO): this worker drives the rendezvous's, KEPT_DIALECT up to
   * HELPER_DIALECT (5 only adds the warm messages, which come before a session), and nothing else. A helper of another (a later release's, after a downgrade) is let be: our end of
   * its channel closed (it waits for the next worker), nothing sent to it, ATTACH refused INTERNAL, LIST
   * from root's record; the session is held to its deadline, at which its unit is stopped. Never ended
   * silently for it.
   */
  helperDialect(dialect: number, link: HelperLink | undefined): void {
    if (this.#adoptedAt === undefined || (dialect >= KEPT_DIALECT && dialect <= HELPER_DIALECT)) return;
    this.#deps.log(`its session helper speaks control dialect ${dialect}, this worker ${HELPER_DIALECT}: the session runs on untouched until its deadline`);
    link?.close();
  }

  /**
   * No last frame reached anyone and the unit ended by itself (kept-end.ts endToKeep): root keeps the end
   * past the unit until the session's keep deadline, in its store (for the next broker) and with the
   * broker ('kept-ended'), which answers LIST, ATTACH and STOP_SESSION with it from now on.
   */
  keepEnd(end: EndedRecord['end']): void {
    const side = this.#side;
    if (!this.#record || !side) return;
    const session = { ...this.#record, detachedSinceMs: this.#record.detachedSinceMs ?? Date.now() };
    const ended = endedRecordOf(session, end, side.lastState, Date.now(), side.deadlineAt);
    if (!ended) return;
    try {
      this.#deps.store?.writeEnded(ended);
    } catch (error) {
      this.#deps.log(`its end could not be written (${(error as Error).message}): it will not outlive this broker`);
    }
    this.#deps.keptEnded?.(ended);
    this.#deps.log(`ended with nobody attached (${end.result}, code ${end.code} status ${end.status}): its end is kept for an ATTACH until ${new Date(ended.untilMs).toISOString()}`);
  }

  /** The session is over: its socket and record go. A kept START that failed may have had its rendezvous
   * bound before anything here knew of it (session-start.ts): its unit's name says its id then. */
  ended(): void {
    const unit = this.#plan ? this.#deps.unit?.() : undefined;
    const id = this.#record?.sessionId ?? this.#side?.facts.sessionId ?? (unit === undefined ? undefined : sessionIdOf(unit, this.#deps.unitPrefix ?? ''));
    if (id !== undefined) this.#deps.store?.remove(id);
  }

  /** Written whole or not at all; a failure is logged (the next broker then reaps the session as an orphan). */
  #save(detachedSinceMs?: number | null): void {
    const { store, log } = this.#deps;
    if (!this.#record || !store) return;
    if (detachedSinceMs !== undefined) this.#record = { ...this.#record, detachedSinceMs };
    try {
      store.write(this.#record);
    } catch (error) {
      log(`its record could not be written (${(error as Error).message}): it will not outlive this worker`);
    }
  }

  closeAll(): void {
    this.#side?.closeAll();
  }
}
