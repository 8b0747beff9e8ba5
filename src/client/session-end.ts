// How a session ended, as the client reports it.
import type { Accounting } from '../protocol/index.ts';

/**
 * How a session ended. `reason: 'exit'`: the program ended; code/status/result are systemd's
 * ExecMainCode (1 exited, 2 killed, 3 dumped), ExecMainStatus and Result. `reason: 'stopped'`: ended on
 * a STOP (ours, another controller's, or a STOP_SESSION); with protocol version 2 code/status/result say
 * how the program ended then, with version 1 code and status are 0 and result is 'stopped' (the server
 * does not say). `reason: 'detached'`: this connection left a kept session with detach(), which goes
 * on; code and status are 0 and result is 'detached'.
 */
export interface SessionEnd {
  reason: 'exit' | 'stopped' | 'detached';
  code: number;
  status: number;
  result: string;
  /** Version 2's end record (each figure null when the server could not measure it); absent with version 1. */
  accounting?: Accounting;
}
