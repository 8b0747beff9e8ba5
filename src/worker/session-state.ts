// A session's lifecycle on the worker's side as one pure state machine: step(state, event) updates the
// facts and returns what to do; checkDone() (every step ends in it, as systemd-run's
// run_context_check_done() after every event) alone moves a session to `final`, once, with `finish`:
// the one place its last frame is written (session.ts). docs/architecture.md "A session's states".
import { ErrorCode, SessionError } from '../protocol/index.ts';
import type { EndReport } from '../control/index.ts';
import type { ExitStatus } from '../systemd/index.ts';
import type { SessionFigures } from './accounting.ts';

/** In order; a session only ever moves forward through them (a failure may skip some). */
export const PHASES = ['handshake', 'starting', 'running', 'draining', 'final', 'done'] as const;
export type Phase = (typeof PHASES)[number];

export type SessionEvent =
  /** The unit has been asked for: from its helper's fork on, the client's write side may be the helper's. */
  | { type: 'launched' }
  /** systemd announced the helper's fork and the helper named its program (the helper wrote STARTED). */
  | { type: 'started' }
  /** A session unit that already runs was taken over: watched, never started, no STARTED. `kept`: a kept
   * session reached through its rendezvous, with no connection attached, its deadline armed at once. */
  | { type: 'adopted'; kept?: boolean }
  /** The start failed (a bad START, the unit's start job, no PID in time, …). */
  | { type: 'start-failed'; error: SessionError }
  /** No START within the handshake deadline. */
  | { type: 'deadline' }
  /** The client hung up (POLLRDHUP/POLLHUP) or its socket failed. */
  | { type: 'client-gone' }
  /** The worker's own end: the broker's shutdown, or a failure of ours. */
  | { type: 'worker-end'; error: SessionError }
  /** The unit's watch failed for another reason than our own stop. */
  | { type: 'watch-lost'; error: SessionError }
  /** The helper relayed the client's STOP. */
  | { type: 'helper-stop' }
  /** The helper's reading of its cgroup, right before its END report. */
  | { type: 'helper-figures'; figures: SessionFigures }
  /** The helper's END report: the data phase is over, the client's write side is the worker's again. */
  | { type: 'helper-end'; report: EndReport }
  /** The helper broke its control channel's rules: nothing more is read from it. */
  | { type: 'helper-lost' }
  /** The unit is inactive (with its exit when systemd recorded one) or gone, by itself or by our stop. */
  | { type: 'unit-inactive'; exit?: ExitStatus }
  /** Leave the unit running and its helper with the client: no stop, no last frame (kept sessions). */
  | { type: 'release' }
  /** Version 3: the START is kept (the broker granted it, limits.maxKept): its connections come and go. */
  | { type: 'keep' }
  /** A kept session: a connection is attached (the START's at STARTED, an ATTACH sent to the helper). */
  | { type: 'attach' }
  /** A kept session: an attached connection left (the helper's DETACHED, or our own POLLRDHUP on our copy). */
  | { type: 'detach' }
  /** A kept session: its keep deadline passed, armed when no connection was left (root's, never the helper's). */
  | { type: 'keep-deadline' }
  /** A kept session: the program ended (the helper's PROGRAM_ENDED); the ring waits for an ATTACH. */
  | { type: 'program-ended'; waitStatus: number }
  /** A kept session: STOP_SESSION(id), which ends it as a STOP (STOPPED to every connection held). */
  | { type: 'stop-session' }
  /** The last frame is written (or not) and everything of the session is closed. */
  | { type: 'finished' };

export type EventType = SessionEvent['type'];

/** Every event type, for the exhaustive table test (a type error here when one is missing). */
export const EVENT_TYPES = [
  'launched',
  'started',
  'adopted',
  'start-failed',
  'deadline',
  'client-gone',
  'worker-end',
  'watch-lost',
  'helper-stop',
  'helper-figures',
  'helper-end',
  'helper-lost',
  'unit-inactive',
  'release',
  'keep',
  'attach',
  'detach',
  'keep-deadline',
  'program-ended',
  'stop-session',
  'finished',
] as const satisfies readonly EventType[];
type Unlisted = Exclude<EventType, (typeof EVENT_TYPES)[number]>;
const everyEventListed: [Unlisted] extends [never] ? true : never = true;
void everyEventListed;

export type SessionAction =
  /** End the start's waits (the START read, the unit's start), with this error. */
  | { type: 'abort-start'; error?: SessionError }
  /** Tell the broker the end is decided (its slot may be waited for). */
  | { type: 'report-finishing' }
  | { type: 'report-started' }
  /** TERMINATE to the helper: it ends at a frame boundary and reports "terminated". */
  | { type: 'terminate' }
  /** TERMINATE, and the unit's stop after stopTimeoutSec (at once if TERMINATE cannot be sent). */
  | { type: 'end-helper' }
  | { type: 'stop-unit' }
  /** STOP's signal steps (unit-stop.ts stopSteps). */
  | { type: 'stop-steps' }
  /** systemd's figures, read now while the cgroup still is (the helper sent none of its own). */
  | { type: 'read-figures' }
  /** The unit is inactive: read the helper's channel to EAGAIN, write the one last frame, clean up. */
  | { type: 'finish' }
  /** Close our side and leave the unit running. */
  | { type: 'release' }
  /** A kept session with no connection: its keep deadline runs from now (keepMs); an attach disarms it. */
  | { type: 'arm-deadline' }
  | { type: 'disarm-deadline' };

/** Which rule decides the last frame (final-frame.ts lastWriteFor): where the end was decided. */
export type EndedIn = 'handshake' | 'starting' | 'running';

export interface SessionState {
  phase: Phase;
  endedIn?: EndedIn;
  /** The start's failure: the ERROR when the worker still holds the client's write side. */
  failure?: SessionError;
  /** Why the worker itself ended the session (shutdown, a lost unit watch, a failed start). */
  workerError?: SessionError;
  /** The client closed or reset its connection: it is sent nothing. */
  clientGone: boolean;
  /** The helper's END report, the first and only one. */
  report?: EndReport;
  helperFigures?: SessionFigures;
  /** The helper broke its channel's rules: this process is not reused. */
  helperFailed: boolean;
  unitEnded: boolean;
  /** How systemd saw the unit's main process end, when it recorded it. */
  exit?: ExitStatus;
  /** STOP's steps have begun (they run once). */
  stopping: boolean;
  /** The session was released, not ended. */
  released: boolean;
  /** Version 3: a kept session (its connections come and go; the worker counts them itself). */
  kept: boolean;
  /** A kept session's attached connections, by the worker's own count. */
  attached: number;
  deadlineArmed: boolean;
  /** The program's wait status once the helper said it ended (PROGRAM_ENDED). */
  programEnded?: number;
  /** STOP_SESSION ended it: its last frame is STOPPED. */
  stopSession: boolean;
}

export interface Step {
  state: SessionState;
  actions: SessionAction[];
}

export function initialState(): SessionState {
  return { phase: 'handshake', clientGone: false, helperFailed: false, unitEnded: false, stopping: false, released: false, kept: false, attached: 0, deadlineArmed: false, stopSession: false };
}

const before = (phase: Phase, than: Phase) => PHASES.indexOf(phase) < PHASES.indexOf(than);

/** The abort of a start the client left (its error is never sent: the client is gone). */
const clientLeft = () => new SessionError(ErrorCode.INTERNAL, 'session ended before its start');

/**
 * The end decided before the unit was asked for (the worker holds the write side: its ERROR goes out
 * at once), or once it was (the helper may hold it: TERMINATE behind GO, the unit stopped, and the
 * last frame waits for the unit's end; docs/architecture.md "The token rule" 2).
 */
function failStart(state: SessionState, failure: SessionError, abort: boolean, abortError?: SessionError): Step {
  const actions: SessionAction[] = abort ? [{ type: 'abort-start', error: abortError }] : [];
  // A STOP already told the broker (helper-stop).
  const told: SessionAction[] = state.stopping ? [] : [{ type: 'report-finishing' }];
  if (state.phase === 'handshake') {
    return { state: { ...state, phase: 'final', endedIn: 'handshake', failure }, actions: [...actions, { type: 'report-finishing' }, { type: 'finish' }] };
  }
  const next: SessionState = { ...state, phase: 'draining', endedIn: 'starting', failure, workerError: state.workerError ?? failure };
  return { state: next, actions: [...actions, ...told, { type: 'terminate' }, { type: 'stop-unit' }] };
}

/** Applies one event; pure. Every event in every phase has a row in test/worker/session-state.test.ts. */
export function step(state: SessionState, event: SessionEvent): Step {
  if (state.phase === 'done') return { state, actions: [] };
  const { state: next, actions } = apply(state, event);
  return checkDone(next, actions);
}

function apply(state: SessionState, event: SessionEvent): Step {
  const { phase } = state;
  const same: Step = { state, actions: [] };
  const startingOrBefore = phase === 'handshake' || phase === 'starting';
  switch (event.type) {
    case 'launched':
      return phase === 'handshake' ? { state: { ...state, phase: 'starting' }, actions: [] } : same;
    case 'started':
      return phase === 'starting' ? { state: { ...state, phase: 'running' }, actions: [{ type: 'report-started' }] } : same;
    case 'adopted':
      if (phase !== 'handshake') return same;
      if (event.kept) return { state: { ...state, phase: 'running', kept: true, attached: 0, deadlineArmed: true }, actions: [{ type: 'arm-deadline' }] };
      return { state: { ...state, phase: 'running' }, actions: [] };
    case 'start-failed':
      return startingOrBefore ? failStart(state, event.error, false) : same;
    case 'deadline': {
      if (phase !== 'handshake') return same;
      const error = new SessionError(ErrorCode.HANDSHAKE_TIMEOUT, 'handshake timeout: no START within the deadline');
      return failStart(state, error, true, error);
    }
    case 'client-gone': {
      if (state.clientGone || !before(phase, 'final')) return same;
      const gone = { ...state, clientGone: true };
      if (startingOrBefore) return failStart(gone, clientLeft(), true);
      // The end is decided now, not when the unit's stop is over: the client may start again at once.
      return { state: gone, actions: [{ type: 'stop-unit' }] };
    }
    case 'worker-end': {
      if (startingOrBefore) return failStart({ ...state, workerError: state.workerError ?? event.error }, event.error, true, event.error);
      // A failed start is already ending as the worker's own end; a final session is past it.
      if (!before(phase, 'final') || state.endedIn === 'starting') return same;
      return { state: { ...state, workerError: state.workerError ?? event.error }, actions: [{ type: 'end-helper' }] };
    }
    case 'watch-lost':
      if (phase === 'handshake' || !before(phase, 'final')) return same;
      return { state: { ...state, workerError: state.workerError ?? event.error }, actions: [{ type: 'terminate' }, { type: 'stop-unit' }] };
    case 'helper-stop':
      // The client may have STARTED (the helper's) and sent STOP before this worker saw the PID.
      if (state.stopping || (phase !== 'starting' && phase !== 'running')) return same;
      // The end is decided: the stop steps bound it (config stoppingSessionBoundMs), so a start that
      // finds every slot held may wait for this one rather than be refused ("16 means 16").
      return { state: { ...state, stopping: true }, actions: [{ type: 'report-finishing' }, { type: 'stop-steps' }] };
    case 'helper-figures':
      return state.helperFigures ? same : { state: { ...state, helperFigures: event.figures }, actions: [] };
    case 'helper-end': {
      if (state.report || phase === 'handshake') return same;
      const actions: SessionAction[] = [];
      // Without the helper's own figures, systemd's are read now, while its cgroup still is.
      if (!state.helperFigures) actions.push({ type: 'read-figures' });
      // After exit or stop the helper ends by itself; otherwise the program may outlive the hang-up.
      if (event.report.reason !== 'exit' && event.report.reason !== 'stop') actions.push({ type: 'stop-unit' });
      return { state: { ...state, report: event.report }, actions };
    }
    case 'helper-lost':
      return state.helperFailed ? same : { state: { ...state, helperFailed: true }, actions: [] };
    case 'unit-inactive':
      if (state.unitEnded) return same;
      return { state: { ...state, unitEnded: true, exit: event.exit }, actions: [] };
    case 'release':
      return phase === 'running' ? { state: { ...state, phase: 'done', released: true }, actions: [{ type: 'release' }] } : same;
    case 'finished':
      return phase === 'final' ? { state: { ...state, phase: 'done' }, actions: [] } : same;
    case 'keep':
      return startingOrBefore && !state.kept ? { state: { ...state, kept: true }, actions: [] } : same;
    case 'attach': {
      if (!state.kept || phase !== 'running') return same;
      const attached = { ...state, attached: state.attached + 1, deadlineArmed: false };
      return { state: attached, actions: state.deadlineArmed ? [{ type: 'disarm-deadline' }] : [] };
    }
    case 'detach': {
      if (!state.kept || state.attached === 0 || !before(phase, 'final')) return same;
      const left = { ...state, attached: state.attached - 1 };
      // The last one gone from a session that runs on: root's keep deadline (an ending session has its own end).
      const arm = left.attached === 0 && phase === 'running' && !state.stopping && !state.report;
      return { state: { ...left, deadlineArmed: arm }, actions: arm ? [{ type: 'arm-deadline' }] : [] };
    }
    case 'keep-deadline':
      if (!state.kept || !state.deadlineArmed || state.attached > 0 || phase !== 'running') return same;
      // TERMINATE, then the unit's stop after stopTimeoutSec, as a shutdown ends a session; the end is decided now.
      return { state: { ...state, deadlineArmed: false, stopping: true }, actions: [{ type: 'report-finishing' }, { type: 'end-helper' }] };
    case 'program-ended':
      return state.kept && state.programEnded === undefined && before(phase, 'final') ? { state: { ...state, programEnded: event.waitStatus }, actions: [] } : same;
    case 'stop-session':
      if (!state.kept || state.stopping || phase !== 'running') return same;
      // TERMINATE: the helper ends the program in its steps and reports, attached or not (a detached
      // helper whose program ended would wait for an ATTACH); the unit is stopped after stopTimeoutSec.
      return { state: { ...state, stopping: true, stopSession: true, deadlineArmed: false }, actions: [...(state.deadlineArmed ? [{ type: 'disarm-deadline' } as const] : []), { type: 'report-finishing' }, { type: 'end-helper' }] };
  }
}

/**
 * The one decision of "done", after every event: a running session whose data phase is over (the
 * helper's report, the client's going) is draining, and the broker is told; a running or draining
 * session whose unit is inactive is final, once, and `finish` writes its last frame. A start still
 * under way is decided by its own end (`started` or `start-failed`), which sees the unit's end first.
 */
export function checkDone(state: SessionState, actions: SessionAction[]): Step {
  const over = state.report !== undefined || state.clientGone;
  if (state.phase === 'running' && (over || state.unitEnded)) {
    const phase = state.unitEnded ? 'final' : 'draining';
    return { state: { ...state, phase, endedIn: 'running' }, actions: [...toldFirst(state, actions), ...(phase === 'final' ? [FINISH] : [])] };
  }
  if (state.phase === 'draining' && state.unitEnded) return { state: { ...state, phase: 'final' }, actions: [...actions, FINISH] };
  return { state, actions };
}

const FINISH: SessionAction = { type: 'finish' };

/** The broker hears of the end before anything is done about it (after STARTED, when this very event
 * started the session), once: a STOP told it already. */
function toldFirst(state: SessionState, actions: SessionAction[]): SessionAction[] {
  const started = actions.filter((action) => action.type === 'report-started');
  const rest = actions.filter((action) => action.type !== 'report-started');
  if (state.stopping && !rest.some((action) => action.type === 'report-finishing')) return [...started, ...rest];
  return [...started, { type: 'report-finishing' }, ...rest.filter((action) => action.type !== 'report-finishing')];
}
