// The broker's view of kept sessions (protocol version 3): which worker runs which session id, the
// count against limits.maxKept, and LIST's answers gathered from the workers within a bound; beside
// them, the ends root keeps of sessions whose units ended with nobody attached (kept-ends.ts). The
// session ids come from the unit names (sessionIdOf), so nothing here has to be kept in step.
import { entryFacts, type DescribedEntry, type KeptFacts, type BrokerMessage } from '../control/index.ts';
import { ErrorCode, SessionState, sessionsFrame, type ErrorCodeValue, type SessionEntry } from '../protocol/index.ts';
import { sessionIdOf } from '../systemd/index.ts';
import type { EndedRecord } from '../kept-store/index.ts';
import type { KeptEnds } from './kept-ends.ts';

/** How long LIST waits for every worker's answer (each worker bounds its helper at 250 ms). */
export const LIST_BOUND_MS = 500;
/** How long an ATTACH or STOP_SESSION waits for a session whose STARTED is out but whose worker has not
 * yet seen its start through ('kept'): a client that attaches right after STARTED is served, not refused. */
export const STARTING_WAIT_MS = 1000;

/** What this module needs of a worker (a WorkerHandle, or a fake in tests). */
export interface KeptWorker {
  unit: string | undefined;
  /** The worker asked to keep its session and was granted it; until its session has ended. */
  keepGranted: boolean;
  /** Its 'kept' report: the session has started. */
  kept: KeptFacts | undefined;
  /** Its end is decided ('finishing'). */
  isFinishing: boolean;
  /** Its session has ended ('ended'). */
  endReason: string | undefined;
  /** Its process has exited (its session with it: nothing more can reach it). */
  gone?: boolean;
  /** The client service whose process started its session (confirmed inside it at the hand-off). */
  service?: string;
  send(message: BrokerMessage, fds?: number[]): void;
  /** Resolves once its session is kept, finishing or ended, or the worker is gone (reach's wait). */
  keptSettled?: Promise<void>;
}

/** Which kept sessions a principal reaches (principals.ts `sees`): every one, or those its client
 * service started (a session's service is recorded at its hand-off: KeptWorker.service). */
export type KeptScope = { sees: 'every' } | { sees: 'service'; service: string | undefined };
export const EVERY: KeptScope = { sees: 'every' };

function inScope(worker: KeptWorker, scope: KeptScope): boolean {
  return scope.sees === 'every' || (worker.service !== undefined && worker.service === scope.service);
}

export type Found<W> = { worker: W } | { code: ErrorCodeValue; message: string };

export interface KeptSessionsDeps<W extends KeptWorker> {
  /** The workers that run sessions now. */
  workers(): Iterable<W>;
  maxKept(): number;
  unitPrefix: string;
  listBoundMs?: number;
  now?(): number;
  /** The ends root keeps past their units: listed as ended, counted against limits.maxKept. */
  ends?: KeptEnds;
}

/** How long LIST, ATTACH and STOP_SESSION wait for a kept session being adopted (a new worker's start,
 * with two cores shared: a cold start's worker is ready in about 300 ms). */
export const ADOPTION_WAIT_MS = 5000;

export class KeptSessions<W extends KeptWorker> {
  #deps: KeptSessionsDeps<W>;
  #nextRequest = 1;
  #waiting = new Map<number, (entry: DescribedEntry) => void>();
  /** Kept sessions whose worker is gone, by id, until a new worker holds them (kept-adoption.ts). */
  #adopting = new Map<number, Promise<void>>();

  constructor(deps: KeptSessionsDeps<W>) {
    this.#deps = deps;
  }

  /** `id` is being adopted until `done` settles: requests for it wait (ADOPTION_WAIT_MS at most). */
  adopting(id: number, done: Promise<void>): void {
    const settled = done.then(
      () => undefined,
      () => undefined,
    );
    this.#adopting.set(id, settled);
    void settled.then(() => {
      if (this.#adopting.get(id) === settled) this.#adopting.delete(id);
    });
  }

  async #adopted(ids: number[]): Promise<void> {
    const pending = ids.flatMap((id) => this.#adopting.get(id) ?? []);
    if (pending.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(pending), new Promise<void>((resolve) => (timer = setTimeout(resolve, ADOPTION_WAIT_MS)))]);
    clearTimeout(timer);
  }

  /** Kept sessions now, starting ones included (each holds its place from its grant), and the ended ones
   * whose end root keeps (each held its place while it ran, and holds it until its EXIT is given). */
  get count(): number {
    let count = this.#deps.ends?.count ?? 0;
    for (const worker of this.#deps.workers()) if (worker.keepGranted && worker.endReason === undefined && !this.#endKept(worker)) count += 1;
    return count;
  }

  /** The worker's session has ended and root keeps the end it reported: the end answers for it from now
   * on. An end it did not report (one read back at the start under a live session's id) never does. */
  #endKept(worker: W): boolean {
    return worker.unit !== undefined && (this.#deps.ends?.reportedBy(sessionIdOf(worker.unit, this.#deps.unitPrefix), worker) ?? false);
  }

  /** A worker's 'kept-ended': its session's end, kept past its unit (checked there). */
  ended(worker: W, value: unknown): void {
    this.#deps.ends?.add(value, worker);
  }

  /** A worker's 'kept': its session is live (started, or adopted), so no end held for its id is its own. */
  live(worker: W): void {
    if (worker.unit !== undefined) this.#deps.ends?.live(sessionIdOf(worker.unit, this.#deps.unitPrefix), worker);
  }

  /** ATTACH or STOP_SESSION for a session whose end root keeps: that end, forgotten as it is answered. */
  takeEnded(id: number, scope: KeptScope = EVERY): EndedRecord | undefined {
    return this.#deps.ends?.take(id, scope);
  }

  /** A worker's 'keep-request': granted while fewer than limits.maxKept are kept; answered at once. */
  keepRequested(worker: W): boolean {
    const granted = !worker.keepGranted && this.count < this.#deps.maxKept();
    if (granted) worker.keepGranted = true;
    worker.send({ type: 'keep-answer', granted: granted || worker.keepGranted });
    return granted;
  }

  /** The worker whose kept session has this id, or why there is none to reach (docs/protocol.md "Version 3"). */
  find(id: number, scope: KeptScope = EVERY): Found<W> {
    const worker = this.#locate(id, scope);
    if (!worker) return { code: ErrorCode.NO_SESSION, message: `no kept session ${id}` };
    if (!worker.kept) return { code: ErrorCode.SESSION_STATE, message: `session ${id} is still starting` };
    if (worker.isFinishing) return { code: ErrorCode.SESSION_STATE, message: `session ${id} is ending` };
    return { worker };
  }

  /** find, but a session still starting is waited for (at most `boundMs`) until its worker reports it
   * kept, finishing or ended: its STARTED may be out before the worker has seen the start through. */
  async reach(id: number, scope: KeptScope = EVERY, boundMs = STARTING_WAIT_MS): Promise<Found<W>> {
    if (this.#adopting.has(id)) await this.#adopted([id]);
    const worker = this.#locate(id, scope);
    if (!worker || worker.kept || worker.isFinishing || !worker.keptSettled) return this.find(id, scope);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([worker.keptSettled, new Promise<void>((resolve) => (timer = setTimeout(resolve, boundMs)))]);
    clearTimeout(timer);
    return this.find(id, scope);
  }

  /** A session outside the scope is not there at all (NO_SESSION, as an unknown id). */
  #locate(id: number, scope: KeptScope): W | undefined {
    for (const worker of this.#deps.workers()) {
      if (!worker.keepGranted || worker.endReason !== undefined || worker.gone || !worker.unit || !inScope(worker, scope) || this.#endKept(worker)) continue;
      if (sessionIdOf(worker.unit, this.#deps.unitPrefix) === id) return worker;
    }
    return undefined;
  }

  /** A worker's 'described': the answer to one of LIST's requests (a late or unknown one is dropped). */
  described(requestId: number, entry: DescribedEntry): void {
    this.#waiting.get(requestId)?.(entry);
  }

  /** LIST: every started kept session, as its worker describes it within the bound, else as last known
   * (state 6 unknown). The frame leaves out what would overflow 64 KiB (sessionsFrame). */
  async list(scope: KeptScope = EVERY): Promise<SessionEntry[]> {
    // Only while adoptions are under way: otherwise every worker is asked at once, in this turn.
    if (this.#adopting.size > 0) await this.#adopted([...this.#adopting.keys()]);
    const asked: Promise<SessionEntry>[] = [];
    const live = new Set<number>();
    for (const worker of this.#deps.workers()) {
      if (!worker.keepGranted || worker.endReason !== undefined || !worker.kept || this.#endKept(worker)) continue;
      const id = worker.unit === undefined ? undefined : sessionIdOf(worker.unit, this.#deps.unitPrefix);
      if (id !== undefined) live.add(id);
      if (inScope(worker, scope)) asked.push(this.#describe(worker, worker.kept));
    }
    // A live session is listed as itself, never as an end held under its id.
    for (const entry of this.#deps.ends?.entries(scope) ?? []) if (!live.has(entry.id)) asked.push(Promise.resolve(entry));
    return Promise.all(asked);
  }

  #describe(worker: W, facts: KeptFacts): Promise<SessionEntry> {
    const requestId = this.#nextRequest++;
    const fallback = fallbackEntry(facts, worker.isFinishing ? SessionState.FINISHING : SessionState.UNKNOWN);
    return new Promise<SessionEntry>((resolve) => {
      const done = (entry: SessionEntry) => {
        clearTimeout(timer);
        this.#waiting.delete(requestId);
        resolve(entry);
      };
      const timer = setTimeout(() => done(fallback), this.#deps.listBoundMs ?? LIST_BOUND_MS);
      this.#waiting.set(requestId, (described) => done(checkedEntry(described, facts.sessionId) ?? fallback));
      try {
        worker.send({ type: 'describe', requestId });
      } catch {
        done(fallback);
      }
    });
  }
}

/** What the broker knows of a session whose worker did not answer: its start, and no offsets. */
export function fallbackEntry(facts: KeptFacts, state: SessionEntry['state']): SessionEntry {
  return {
    ...entryFacts(facts),
    state,
    controllers: 0,
    observers: 0,
    deadlineMs: 0,
    oldest: 0n,
    next: 0n,
    fresh: false,
    endCode: 0,
    endStatus: 0,
  };
}

/** The worker's entry as the codec will encode it, or undefined for one it would refuse (or another id). */
export function checkedEntry(described: DescribedEntry, id: number): SessionEntry | undefined {
  try {
    if (described.id !== id || !/^\d{1,20}$/.test(described.oldest) || !/^\d{1,20}$/.test(described.next)) return undefined;
    const entry: SessionEntry = { ...described, oldest: BigInt(described.oldest), next: BigInt(described.next) };
    // The codec's own checks: a field it would refuse is refused here, before the frame is built.
    return sessionsFrame([entry]).sessions.length === 1 ? entry : undefined;
  } catch {
    return undefined;
  }
}
