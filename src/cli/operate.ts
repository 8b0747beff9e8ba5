// The operator commands by name; each lives in its own module with its own --help.
import type { CommandContext } from './context.ts';
import { runInstall } from './install.ts';
import { runStatus } from './status.ts';
import { runStop } from './stop.ts';
import { runUninstall } from './uninstall.ts';
import { runVerify } from './verify.ts';

export { defaultContext } from './context.ts';

export const OPERATOR_COMMANDS: Record<string, (args: readonly string[], context: CommandContext) => number> = {
  install: runInstall,
  uninstall: runUninstall,
  stop: runStop,
  status: runStatus,
  verify: runVerify,
};

export const OPERATOR_USAGE = `Operator commands (run as root; each has --help):
  install    install or upgrade the supervisor on this host (--dry-run prints the plan)
  uninstall  end live sessions and remove what install wrote (--purge: the config too)
  stop       end a live session (UNIT) or every one (--all)
  status     the socket, the broker and live sessions (--json for scripts)
  verify     compare the installation with the build's manifest; check Node
`;
