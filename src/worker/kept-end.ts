// STOP_SESSION's last frame (pure): a kept session stopped by id ends as a STOP, so every connection
// held for it reads STOPPED with how the program ended, as a client's own STOP gives (docs/protocol.md).
import type { Accounting, Frame } from '../protocol/index.ts';
import type { ExitStatus } from '../systemd/index.ts';

/** STOPPED for a session STOP_SESSION ended once the helper reported (its TERMINATE's end, or the
 * program's own), with how systemd saw the program end; undefined without a report (nothing may be
 * written then: final-frame.ts lastWrite). */
export function stoppedFor(reported: boolean, exit: ExitStatus | undefined, accounting: Accounting | undefined): Frame | undefined {
  if (!reported) return undefined;
  const { code, status, result } = exit ?? { code: 0, status: 0, result: 'stopped' };
  return accounting ? { type: 'stopped', end: { code, status, result, accounting } } : { type: 'stopped' };
}
