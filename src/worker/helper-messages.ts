// What the session helper's control channel says (helper-link.ts), turned into what the session does:
// the state machine's events, the program's pid, the kept part's reports, and its journal lines. The
// helper's word is untrusted data throughout: quoted in the journal, checked by the decoder.
import type { HelperMessage } from '../control/index.ts';
import { figuresFrom } from './accounting.ts';
import type { ProgramPid } from './program-pid.ts';
import type { SessionEvent } from './session-state.ts';
import type { SessionKeep } from './session-keep.ts';

export interface HelperMessageTargets {
  dispatch(event: SessionEvent): void;
  programPid: ProgramPid;
  keep: SessionKeep;
  log(message: string): void;
  unit: string | undefined;
  /** The helper's dialect (its HELLO, the first message of every channel). */
  hello?(dialect: number): void;
}

export function onHelperMessage(message: HelperMessage, to: HelperMessageTargets): void {
  switch (message.type) {
    case 'log':
      // The helper's text is data: quoted into one line, never spliced into the message.
      return to.log(`${to.unit}: session helper [${message.priority}]: ${JSON.stringify(message.text)}`);
    case 'stop':
      return to.dispatch({ type: 'helper-stop' });
    case 'pid':
      return to.programPid.reported(message.pid);
    case 'figures':
      // The helper's word, for its client's end record only (root's journal takes systemd's).
      return to.dispatch({ type: 'helper-figures', figures: figuresFrom(message.figures) });
    case 'detached':
      return to.keep.helperDetached(message.report);
    case 'state':
      return to.keep.helperState(message.state);
    case 'program-ended':
      return to.dispatch({ type: 'program-ended', waitStatus: message.waitStatus });
    case 'hello':
      return to.hello?.(message.dialect);
    case 'end':
      to.dispatch({ type: 'helper-end', report: message.report });
      // Before a pid, the program never ran: the start fails with the helper's reason.
      return to.programPid.failed(message.report.text);
  }
}
