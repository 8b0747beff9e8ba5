// STOP_SESSION's last frame (pure): a kept session stopped by id ends as a STOP, so every connection
// held for it reads STOPPED with how the program ended, as a client's own STOP gives (docs/protocol.md).
import type { Frame } from '../protocol/index.ts';

/** The STOPPED frame for the last frame a stopped session's end gave (EXIT becomes STOPPED with its end
 * record; an ERROR stays the ERROR). */
export function stoppedFrom(frame: Frame): Frame {
  if (frame.type !== 'exit') return frame;
  const { code, status, result, accounting } = frame;
  return accounting ? { type: 'stopped', end: { code, status, result, accounting } } : { type: 'stopped' };
}
