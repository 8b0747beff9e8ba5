// Whether a START asks to be kept, and how (pure): its keepMs, retainBytes and label checked against
// the config, never silently lowered (docs/protocol.md "Version 3", START), and the session helper's
// arguments for it.
import type { Config } from '../config/index.ts';
import { ErrorCode, KEEP_VERSION, SessionError, type FrameOf } from '../protocol/index.ts';

export interface KeepPlan {
  keepMs: number;
  /** The ring's size: START's, or session.defaultRetainedBytes for 0. */
  retainBytes: number;
  label: string;
}

/** The START's keep plan, undefined when it is not kept (keepMs 0, or a version before 3); BAD_START naming the limit it passes. */
export function keepPlanFor(frame: FrameOf<'start'>, config: Pick<Config, 'session'>, version: number): KeepPlan | undefined {
  const keepMs = frame.keepMs ?? 0;
  if (version < KEEP_VERSION || keepMs === 0) return undefined;
  const { maxKeepMs, maxRetainedBytes, defaultRetainedBytes } = config.session;
  if (keepMs > maxKeepMs) throw new SessionError(ErrorCode.BAD_START, `keepMs ${keepMs} exceeds the server's session.maxKeepMs (${maxKeepMs})`);
  const asked = frame.retainBytes ?? 0;
  if (asked > maxRetainedBytes) throw new SessionError(ErrorCode.BAD_START, `retainBytes ${asked} exceeds the server's session.maxRetainedBytes (${maxRetainedBytes})`);
  return { keepMs, retainBytes: asked === 0 ? defaultRetainedBytes : asked, label: frame.label ?? '' };
}

/** The session helper's arguments for a kept session (native/session/main.c, before ROWS). */
export function keepHelperArgs(plan: KeepPlan, sessionId: number, maxObservers: number): string[] {
  return ['--keep', `--session-id=${sessionId}`, `--retain-bytes=${plan.retainBytes}`, `--max-observers=${maxObservers}`];
}
