// A kept session's end (pure): STOP_SESSION's last frame (a kept session stopped by id ends as a STOP,
// so every connection held for it reads STOPPED with how the program ended, as a client's own STOP
// gives), and the end root keeps when no last frame reached anyone (docs/protocol.md).
import type { Accounting, Frame, ProgramEnd } from '../protocol/index.ts';
import type { ExitStatus } from '../systemd/index.ts';
import { endOf } from './kept-describe.ts';
import type { SessionState } from './session-state.ts';

/** STOPPED for a session STOP_SESSION ended once the helper reported (its TERMINATE's end, or the
 * program's own), with how systemd saw the program end; undefined without a report (nothing may be
 * written then: final-frame.ts lastWrite). */
export function stoppedFor(reported: boolean, exit: ExitStatus | undefined, accounting: Accounting | undefined): Frame | undefined {
  if (!reported) return undefined;
  const { code, status, result } = exit ?? { code: 0, status: 0, result: 'stopped' };
  return accounting ? { type: 'stopped', end: { code, status, result, accounting } } : { type: 'stopped' };
}

/** What decides whether root keeps a kept session's end past its unit (session-state.ts holds it). */
export type KeptEndFacts = Pick<SessionState, 'kept' | 'endedIn' | 'exit' | 'attached' | 'deadlineArmed' | 'stopping' | 'stopSession' | 'workerError' | 'helperFailed' | 'report' | 'programEnded'>;

/**
 * The end root keeps for a kept session (issue 32), or undefined: only one whose unit ended by itself
 * (its wall clock, an OOM kill, its helper killed) while it ran detached, its keep deadline armed, with
 * no last frame to write to anyone (`recipients` 0) and no report from its helper, so nothing else would
 * ever tell its client how it ended. An end of ours (its deadline, STOP_SESSION, a shutdown or a fault)
 * is not kept, nor one systemd recorded no exit for. The code and status are the program's as its
 * helper reported them (PROGRAM_ENDED: what LIST showed, and what the helper's exit mirrors), else
 * systemd's for the unit's main process; the result is systemd's Result.
 */
export function endToKeep(facts: KeptEndFacts, recipients: number): ProgramEnd | undefined {
  const { exit } = facts;
  if (!facts.kept || facts.endedIn !== 'running' || !exit || recipients > 0 || facts.attached > 0 || !facts.deadlineArmed) return undefined;
  if (facts.stopping || facts.stopSession || facts.workerError || facts.helperFailed || facts.report) return undefined;
  if (facts.programEnded === undefined) return { code: exit.code, status: exit.status, result: exit.result };
  const { endCode, endStatus } = endOf(facts.programEnded);
  return { code: endCode, status: endStatus, result: exit.result };
}
