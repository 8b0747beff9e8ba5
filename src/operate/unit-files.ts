// The unit files and drop-ins an installation consists of, as pure text builders from the shipped templates.
import { SESSIONS_SLICE, SOCKET_UNIT } from './layout.ts';

/** Default limits of the sessions slice: all sessions together, not each (systemd.resource-control(5)). */
export const SLICE_DEFAULTS = {
  /** Sessions together may use at most this share of the host's memory. */
  MemoryMax: '50%',
  /** Processes and threads of all sessions together. */
  TasksMax: 4096,
  /** Half of an ordinary service's weight (100): under contention the host's services come first. */
  CPUWeight: 50,
} as const;

export type SliceLimits = { [K in keyof typeof SLICE_DEFAULTS]: string | number };

export function sliceUnit(limits: SliceLimits = SLICE_DEFAULTS): string {
  return [
    '# opencode-pty: every terminal session runs in this slice. Written by `opencode-ptyctl install`;',
    '# change limits with `systemctl set-property ' + SESSIONS_SLICE + ' NAME=VALUE` or a drop-in.',
    '[Unit]',
    'Description=opencode-pty terminal sessions',
    'Documentation=man:systemd.slice(5)',
    'Before=slices.target',
    '',
    '[Slice]',
    `MemoryMax=${limits.MemoryMax}`,
    `TasksMax=${limits.TasksMax}`,
    `CPUWeight=${limits.CPUWeight}`,
    // Accounting on a slice turns it on for every unit in it (systemd.resource-control(5)): the
    // figures each session's end logs, where the kernel has the controller.
    'CPUAccounting=yes',
    'MemoryAccounting=yes',
    'TasksAccounting=yes',
    'IOAccounting=yes',
    '',
  ].join('\n');
}

/**
 * The broker's template with the Node that install found and the versioned bundle directory: a
 * running broker keeps its own directory (its workers start from beside its broker.cjs) while an
 * upgrade points the unit at the next one.
 */
export function serviceUnit(template: string, nodePath: string, bundleDir: string, configPath: string): string {
  if (!/^ExecStart=/m.test(template)) throw new Error('the service template has no ExecStart= line');
  return template
    .replace(/^ExecStart=.*$/m, `ExecStart=${nodePath} ${bundleDir}/broker.cjs`)
    .replace(/^Environment=OPENCODE_PTY_CONFIG=.*$/m, `Environment=OPENCODE_PTY_CONFIG=${configPath}`);
}

export function socketDropIn(socketGroup: string): string {
  return `# Written by opencode-ptyctl install: the socket's group, which only the agent's unit gets.\n[Socket]\nSocketGroup=${socketGroup}\n`;
}

/** The agent's service gets the socket group as a supplementary group of its processes only. */
export function clientDropIn(socketGroup: string): string {
  return `# Written by opencode-ptyctl install: lets this service reach ${SOCKET_UNIT}'s socket.\n[Service]\nSupplementaryGroups=${socketGroup}\n`;
}

export function configReadme(): string {
  return [
    'config.json here configures the opencode-pty supervisor (JSON, so comments live here).',
    'Every field, its default and meaning: docs/operations.md, section "Configuration", in the',
    'package (opencode-pty-supervisor). The broker reads the file when it starts; a running broker',
    'keeps its settings until it exits (idle exit, or `systemctl stop opencode-pty-supervisor@broker.service`).',
    'Check a change with `opencode-ptyctl verify`.',
    '',
  ].join('\n');
}
