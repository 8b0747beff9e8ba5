// The session's state machine (session-state.ts): every event in every phase as a table, the one
// decision of "done" under any order of events, and the adopt and release entries kept sessions need.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import type { EndReport, HelperEndReason } from '../../src/control/helper-channel.ts';
import { ErrorCode } from '../../src/protocol/constants.ts';
import { SessionError } from '../../src/protocol/session-error.ts';
import { lastWriteFor } from '../../src/worker/final-frame.ts';
import { EVENT_TYPES, PHASES, initialState, step, type EventType, type Phase, type SessionAction, type SessionEvent, type SessionState } from '../../src/worker/session-state.ts';

const report = (reason: HelperEndReason): EndReport => ({ reason, code: 0, bytesIn: 0n, bytesOut: 0n, remainder: Buffer.alloc(0), text: '' });
const SHUTDOWN = new SessionError(ErrorCode.SHUTDOWN, 'supervisor is shutting down');
const EXIT = { code: 1, status: 3, result: 'exit-code' };

/** One event of each type, as the table sends it. */
const SAMPLE: Record<EventType, SessionEvent> = {
  launched: { type: 'launched' },
  started: { type: 'started' },
  adopted: { type: 'adopted' },
  'start-failed': { type: 'start-failed', error: new SessionError(ErrorCode.START_FAILED, 'session unit could not be started') },
  deadline: { type: 'deadline' },
  'client-gone': { type: 'client-gone' },
  'worker-end': { type: 'worker-end', error: SHUTDOWN },
  'watch-lost': { type: 'watch-lost', error: new SessionError(ErrorCode.INTERNAL, 'watching the session unit failed') },
  'helper-stop': { type: 'helper-stop' },
  'helper-figures': { type: 'helper-figures', figures: {} },
  'helper-end': { type: 'helper-end', report: report('flow') },
  'helper-lost': { type: 'helper-lost' },
  'unit-inactive': { type: 'unit-inactive', exit: EXIT },
  release: { type: 'release' },
  keep: { type: 'keep' },
  attach: { type: 'attach' },
  detach: { type: 'detach' },
  'keep-deadline': { type: 'keep-deadline' },
  'program-ended': { type: 'program-ended', waitStatus: 7 << 8 },
  'stop-session': { type: 'stop-session' },
  finished: { type: 'finished' },
};

/** Version 3's events, which change nothing of a session that is not kept. */
const KEPT_EVENTS: EventType[] = ['keep', 'attach', 'detach', 'keep-deadline', 'program-ended', 'stop-session'];

function run(events: SessionEvent[], from: SessionState = initialState()): { state: SessionState; actions: SessionAction[] } {
  let state = from;
  const actions: SessionAction[] = [];
  for (const event of events) {
    const next = step(state, event);
    state = next.state;
    actions.push(...next.actions);
  }
  return { state, actions };
}

/** Each phase as the session reaches it the ordinary way (running ends by the helper's exit report). */
const AT: Record<Phase, SessionEvent[]> = {
  handshake: [],
  starting: [SAMPLE.launched],
  running: [SAMPLE.launched, SAMPLE.started],
  draining: [SAMPLE.launched, SAMPLE.started, { type: 'helper-end', report: report('exit') }],
  final: [SAMPLE.launched, SAMPLE.started, { type: 'helper-end', report: report('exit') }, SAMPLE['unit-inactive']],
  done: [SAMPLE.launched, SAMPLE.started, { type: 'helper-end', report: report('exit') }, SAMPLE['unit-inactive'], SAMPLE.finished],
};

type Row = [Phase, ...SessionAction['type'][]];
/** Events that leave `phase` as it is and do nothing, listed by name: a new event must be placed. */
const quiet = (phase: Phase, events: EventType[]): Partial<Record<EventType, Row>> => Object.fromEntries(events.map((type) => [type, [phase]]));

/** phase → event → [the phase after it, the actions in order]; every cell is listed (checked below). */
const TABLE: Record<Phase, Partial<Record<EventType, Row>>> = {
  handshake: {
    ...quiet('handshake', [...KEPT_EVENTS, 'started', 'watch-lost', 'helper-stop', 'helper-figures', 'helper-end', 'helper-lost', 'unit-inactive', 'release', 'finished']),
    launched: ['starting'],
    adopted: ['running'],
    'start-failed': ['final', 'report-finishing', 'finish'],
    deadline: ['final', 'abort-start', 'report-finishing', 'finish'],
    'client-gone': ['final', 'abort-start', 'report-finishing', 'finish'],
    'worker-end': ['final', 'abort-start', 'report-finishing', 'finish'],
  },
  starting: {
    ...quiet('starting', [...KEPT_EVENTS, 'launched', 'adopted', 'deadline', 'helper-figures', 'helper-lost', 'unit-inactive', 'release', 'finished']),
    started: ['running', 'report-started'],
    'start-failed': ['draining', 'report-finishing', 'terminate', 'stop-unit'],
    'client-gone': ['draining', 'abort-start', 'report-finishing', 'terminate', 'stop-unit'],
    'worker-end': ['draining', 'abort-start', 'report-finishing', 'terminate', 'stop-unit'],
    'watch-lost': ['starting', 'terminate', 'stop-unit'],
    'helper-stop': ['starting', 'report-finishing', 'stop-steps'],
    'helper-end': ['starting', 'read-figures', 'stop-unit'],
  },
  running: {
    ...quiet('running', [...KEPT_EVENTS, 'launched', 'started', 'adopted', 'start-failed', 'deadline', 'helper-figures', 'helper-lost', 'finished']),
    'client-gone': ['draining', 'report-finishing', 'stop-unit'],
    'worker-end': ['running', 'end-helper'],
    'watch-lost': ['running', 'terminate', 'stop-unit'],
    'helper-stop': ['running', 'report-finishing', 'stop-steps'],
    'helper-end': ['draining', 'report-finishing', 'read-figures', 'stop-unit'],
    'unit-inactive': ['final', 'report-finishing', 'finish'],
    release: ['done', 'release'],
  },
  draining: {
    ...quiet('draining', [...KEPT_EVENTS, 'launched', 'started', 'adopted', 'start-failed', 'deadline', 'helper-stop', 'helper-figures', 'helper-end', 'helper-lost', 'release', 'finished']),
    'client-gone': ['draining', 'stop-unit'],
    'worker-end': ['draining', 'end-helper'],
    'watch-lost': ['draining', 'terminate', 'stop-unit'],
    'unit-inactive': ['final', 'finish'],
  },
  final: {
    ...quiet('final', [...KEPT_EVENTS, 'launched', 'started', 'adopted', 'start-failed', 'deadline', 'client-gone', 'worker-end', 'watch-lost', 'helper-stop', 'helper-figures', 'helper-end', 'helper-lost', 'unit-inactive', 'release']),
    finished: ['done'],
  },
  done: quiet('done', [...EVENT_TYPES]),
};

test('the table names every phase and every event, and nothing else', () => {
  assert.equal(Object.keys(TABLE).sort(), [...PHASES].sort());
  for (const phase of PHASES) assert.equal(Object.keys(TABLE[phase]).sort(), [...EVENT_TYPES].sort(), phase);
  assert.equal(Object.keys(SAMPLE).sort(), [...EVENT_TYPES].sort());
});

test('each phase is reached the ordinary way', () => {
  for (const phase of PHASES) assert.is(run(AT[phase]).state.phase, phase, phase);
});

for (const phase of PHASES) {
  test(`every event in ${phase}`, () => {
    const { state } = run(AT[phase]);
    for (const type of EVENT_TYPES) {
      const [to, ...actions] = TABLE[phase][type]!;
      const next = step(state, SAMPLE[type]);
      assert.equal([next.state.phase, ...next.actions.map((action) => action.type)], [to, ...actions], `${phase} + ${type}`);
    }
  });
}

/** A kept session, each state as it is reached: its START's connection attached at STARTED. */
const KEPT_AT = {
  attached: [SAMPLE.keep, SAMPLE.launched, SAMPLE.started, SAMPLE.attach],
  detached: [SAMPLE.keep, SAMPLE.launched, SAMPLE.started, SAMPLE.attach, SAMPLE.detach],
  ended: [SAMPLE.keep, SAMPLE.launched, SAMPLE.started, SAMPLE.attach, SAMPLE.detach, SAMPLE['program-ended']],
  expired: [SAMPLE.keep, SAMPLE.launched, SAMPLE.started, SAMPLE.attach, SAMPLE.detach, SAMPLE['keep-deadline']],
} as const;

/** state → event → [phase after, attached after, deadline armed after, the actions]: every event, for each kept state. */
type KeptRow = [Phase, number, boolean, ...SessionAction['type'][]];
const KEPT_TABLE: Record<keyof typeof KEPT_AT, Record<EventType, KeptRow>> = {
  attached: {
    launched: ['running', 1, false], started: ['running', 1, false], adopted: ['running', 1, false], 'start-failed': ['running', 1, false], deadline: ['running', 1, false],
    'client-gone': ['draining', 1, false, 'report-finishing', 'stop-unit'],
    'worker-end': ['running', 1, false, 'end-helper'],
    'watch-lost': ['running', 1, false, 'terminate', 'stop-unit'],
    'helper-stop': ['running', 1, false, 'report-finishing', 'stop-steps'],
    'helper-figures': ['running', 1, false], 'helper-lost': ['running', 1, false],
    'helper-end': ['draining', 1, false, 'report-finishing', 'read-figures', 'stop-unit'],
    'unit-inactive': ['final', 1, false, 'report-finishing', 'finish'],
    release: ['done', 1, false, 'release'],
    keep: ['running', 1, false],
    attach: ['running', 2, false],
    detach: ['running', 0, true, 'arm-deadline'],
    'keep-deadline': ['running', 1, false],
    'program-ended': ['running', 1, false],
    'stop-session': ['running', 1, false, 'report-finishing', 'end-helper'],
    finished: ['running', 1, false],
  },
  detached: {
    launched: ['running', 0, true], started: ['running', 0, true], adopted: ['running', 0, true], 'start-failed': ['running', 0, true], deadline: ['running', 0, true],
    'client-gone': ['draining', 0, true, 'report-finishing', 'stop-unit'],
    'worker-end': ['running', 0, true, 'end-helper'],
    'watch-lost': ['running', 0, true, 'terminate', 'stop-unit'],
    'helper-stop': ['running', 0, true, 'report-finishing', 'stop-steps'],
    'helper-figures': ['running', 0, true], 'helper-lost': ['running', 0, true],
    'helper-end': ['draining', 0, true, 'report-finishing', 'read-figures', 'stop-unit'],
    'unit-inactive': ['final', 0, true, 'report-finishing', 'finish'],
    release: ['done', 0, true, 'release'],
    keep: ['running', 0, true],
    attach: ['running', 1, false, 'disarm-deadline'],
    detach: ['running', 0, true],
    'keep-deadline': ['running', 0, false, 'report-finishing', 'end-helper'],
    'program-ended': ['running', 0, true],
    'stop-session': ['running', 0, false, 'disarm-deadline', 'report-finishing', 'end-helper'],
    finished: ['running', 0, true],
  },
  ended: {} as Record<EventType, KeptRow>,
  expired: {
    launched: ['running', 0, false], started: ['running', 0, false], adopted: ['running', 0, false], 'start-failed': ['running', 0, false], deadline: ['running', 0, false],
    'client-gone': ['draining', 0, false, 'stop-unit'],
    'worker-end': ['running', 0, false, 'end-helper'],
    'watch-lost': ['running', 0, false, 'terminate', 'stop-unit'],
    'helper-stop': ['running', 0, false],
    'helper-figures': ['running', 0, false], 'helper-lost': ['running', 0, false],
    'helper-end': ['draining', 0, false, 'read-figures', 'stop-unit'],
    'unit-inactive': ['final', 0, false, 'finish'],
    release: ['done', 0, false, 'release'],
    keep: ['running', 0, false],
    attach: ['running', 1, false],
    detach: ['running', 0, false],
    'keep-deadline': ['running', 0, false],
    'program-ended': ['running', 0, false],
    'stop-session': ['running', 0, false],
    finished: ['running', 0, false],
  },
};
// A program that ended while detached waits as a detached one does: the same row for every event.
KEPT_TABLE.ended = KEPT_TABLE.detached;

for (const [name, events] of Object.entries(KEPT_AT)) {
  test(`a kept session ${name}: every event`, () => {
    const { state } = run([...events]);
    assert.equal(Object.keys(KEPT_TABLE[name as keyof typeof KEPT_AT]).sort(), [...EVENT_TYPES].sort());
    for (const type of EVENT_TYPES) {
      const [phase, attached, armed, ...actions] = KEPT_TABLE[name as keyof typeof KEPT_AT][type];
      const next = step(state, SAMPLE[type]);
      assert.equal([next.state.phase, next.state.attached, next.state.deadlineArmed, ...next.actions.map((action) => action.type)], [phase, attached, armed, ...actions], `${name} + ${type}`);
    }
  });
}

test('a kept session: the program\'s end while detached is recorded once; STOP_SESSION ends it as a STOP', () => {
  const ended = run([...KEPT_AT.ended, { type: 'program-ended', waitStatus: 9 }]).state;
  assert.is(ended.programEnded, 7 << 8, 'the first report stands');
  const stopped = run([...KEPT_AT.attached, SAMPLE['stop-session'], { type: 'helper-end', report: report('exit') }, SAMPLE['unit-inactive']]);
  assert.is(stopped.state.phase, 'final');
  assert.ok(stopped.state.stopSession);
  assert.is(stopped.actions.filter((action) => action.type === 'report-finishing').length, 1, 'the broker told once');
});

test('done takes nothing: the state is returned as it was', () => {
  const { state } = run(AT.done);
  for (const type of EVENT_TYPES) assert.is(step(state, SAMPLE[type]).state, state, type);
});

/** An arbitrary event, with the payloads that change decisions. */
const anyEvent: fc.Arbitrary<SessionEvent> = fc.oneof(
  fc.constantFrom(...EVENT_TYPES).map((type) => SAMPLE[type]),
  fc.constantFrom<HelperEndReason>('exit', 'stop', 'flow', 'protocol', 'terminated', 'internal', 'client-gone').map((reason): SessionEvent => ({ type: 'helper-end', report: report(reason) })),
  fc.constant<SessionEvent>({ type: 'unit-inactive' }),
);

test('any order of events: at most one finish, only on reaching final; the broker told of STARTED and of the end at most once each; finish always last', () => {
  fc.assert(
    fc.property(fc.array(anyEvent, { maxLength: 16 }), (events) => {
      let state = initialState();
      const seen: SessionAction['type'][] = [];
      for (const event of events) {
        const before = state.phase;
        const next = step(state, event);
        const types = next.actions.map((action) => action.type);
        if (types.includes('finish')) {
          assert.is(types.at(-1), 'finish');
          assert.is(next.state.phase, 'final');
          assert.is.not(before, 'final');
        }
        if (next.state.phase === 'final' && before !== 'final') assert.ok(types.includes('finish'), 'final is entered only with finish');
        assert.ok(PHASES.indexOf(next.state.phase) >= PHASES.indexOf(before), 'phases only move forward');
        seen.push(...types);
        state = next.state;
      }
      assert.ok(seen.filter((type) => type === 'finish').length <= 1);
      assert.ok(seen.filter((type) => type === 'report-finishing').length <= 1);
      assert.ok(seen.filter((type) => type === 'report-started').length <= 1);
      if (seen.includes('release')) assert.not.ok(seen.includes('finish'), 'a released session writes no last frame');
    }),
    { numRuns: 3000 },
  );
});

test('a start whose unit ended first: STARTED, then the end at once (the unit\'s end is the start\'s to see)', () => {
  const { state, actions } = run([SAMPLE.launched, { type: 'helper-end', report: report('exit') }, SAMPLE['unit-inactive'], SAMPLE.started]);
  assert.is(state.phase, 'final');
  assert.equal(
    actions.map((action) => action.type),
    ['read-figures', 'report-started', 'report-finishing', 'finish'],
  );
  assert.equal(lastWriteFor(state, true).frame, { type: 'exit', ...EXIT });
});

test('a failed start after the unit ended: final at once, and the failure is the ERROR when the helper named no program', () => {
  const failure = new SessionError(ErrorCode.START_FAILED, 'start job ended "failed"');
  const { state, actions } = run([SAMPLE.launched, SAMPLE['unit-inactive'], { type: 'start-failed', error: failure }]);
  assert.is(state.phase, 'final');
  assert.equal(actions.map((action) => action.type).at(-1), 'finish');
  assert.equal(lastWriteFor(state, false), { frame: { type: 'error', code: ErrorCode.START_FAILED, message: 'start job ended "failed"' }, reason: 'error' });
  // A shutdown after the failure changes nothing: the start's end is already the worker's own.
  const draining = run([SAMPLE.launched, { type: 'start-failed', error: failure }]).state;
  assert.equal(step(draining, SAMPLE['worker-end']), { state: draining, actions: [] });
});

test('adopt: a running unit taken over is never started and never tells STARTED; its end is an ordinary one', () => {
  const { state, actions } = run([SAMPLE.adopted, { type: 'helper-end', report: report('exit') }, SAMPLE['unit-inactive']]);
  assert.is(state.phase, 'final');
  assert.not.ok(actions.some((action) => action.type === 'report-started'), 'no STARTED');
  assert.equal(lastWriteFor(state, true), { remainder: undefined, frame: { type: 'exit', ...EXIT }, reason: 'exit' });
  // Nothing of a start applies to it.
  const adopted = run([SAMPLE.adopted]).state;
  for (const type of ['launched', 'started', 'start-failed', 'deadline'] as const) assert.equal(step(adopted, SAMPLE[type]), { state: adopted, actions: [] }, type);
});

test('adopt a kept session: running, kept, nobody attached, its deadline armed at once; an ATTACH disarms it, the deadline ends it', () => {
  const adopted = step(initialState(), { type: 'adopted', kept: true });
  assert.equal([adopted.state.phase, adopted.state.kept, adopted.state.attached, adopted.state.deadlineArmed], ['running', true, 0, true]);
  assert.equal(adopted.actions, [{ type: 'arm-deadline' }]);
  const attached = step(adopted.state, SAMPLE.attach);
  assert.equal(attached.actions, [{ type: 'disarm-deadline' }]);
  const ended = step(adopted.state, SAMPLE['keep-deadline']);
  assert.equal(ended.actions.map((action) => action.type), ['report-finishing', 'end-helper']);
  // Release (a shutdown) leaves it running again, for the broker after this one.
  assert.is(step(adopted.state, SAMPLE.release).state.released, true);
});

test('release: our side closes with no stop and no last frame; nothing the unit does later reaches the session', () => {
  const { state, actions } = run([SAMPLE.launched, SAMPLE.started, SAMPLE.release, { type: 'helper-end', report: report('exit') }, SAMPLE['unit-inactive'], SAMPLE['client-gone']]);
  assert.is(state.phase, 'done');
  assert.ok(state.released);
  assert.equal(actions.map((action) => action.type), ['report-started', 'release']);
  // Only a running session is released: a start, or an end already decided, keeps its course.
  for (const phase of ['handshake', 'starting', 'draining', 'final'] as const) {
    const at = run(AT[phase]).state;
    assert.equal(step(at, SAMPLE.release), { state: at, actions: [] }, phase);
  }
});

test('STOP\'s steps run once, however often the helper relays STOP', () => {
  const { actions } = run([...AT.running, SAMPLE['helper-stop'], SAMPLE['helper-stop']]);
  assert.equal(actions.filter((action) => action.type === 'stop-steps').length, 1);
});

test('STOP tells the broker the end is decided at once (its slot may be waited for), and once: not again at the report, the unit\'s end or a failed start', () => {
  const finishing = (events: SessionEvent[]) => run(events).actions.filter((action) => action.type === 'report-finishing').length;
  assert.is(finishing([...AT.running, SAMPLE['helper-stop']]), 1);
  assert.is(finishing([...AT.running, SAMPLE['helper-stop'], { type: 'helper-end', report: report('stop') }, SAMPLE['unit-inactive']]), 1);
  assert.is(finishing([...AT.running, SAMPLE['helper-stop'], SAMPLE['unit-inactive']]), 1);
  assert.is(finishing([...AT.running, SAMPLE['helper-stop'], SAMPLE['client-gone']]), 1);
  assert.is(finishing([SAMPLE.launched, SAMPLE['helper-stop'], SAMPLE['client-gone']]), 1);
  assert.is(finishing([SAMPLE.launched, SAMPLE['helper-stop'], SAMPLE['start-failed']]), 1);
  // Without STOP, the end is told once as before.
  assert.is(finishing([...AT.running, { type: 'helper-end', report: report('exit') }, SAMPLE['unit-inactive']]), 1);
});

test('the first END report is the one: a second never replaces it', () => {
  const { state } = run([...AT.running, { type: 'helper-end', report: report('exit') }, { type: 'helper-end', report: report('flow') }]);
  assert.is(state.report?.reason, 'exit');
});

test.run();
