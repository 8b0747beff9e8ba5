// Where an installation lives and what its parts are called: one place for every path the operator commands touch.
export const PROJECT_PREFIX = 'opencode-pty-';
export const SOCKET_UNIT = 'opencode-pty-supervisor.socket';
export const SERVICE_TEMPLATE = 'opencode-pty-supervisor@.service';
export { BROKER_UNIT } from '../systemd/index.ts';
/**
 * The sessions' slice. A dash in a slice name is a level of the tree (systemd.slice(5)): the old default
 * `opencode-pty-sessions.slice` sat in `opencode-pty.slice` in `opencode.slice`, a likely home for the
 * operator's own agent, whose limits would then cover the sessions too. Underscores do not nest, need no
 * escaping (unlike `\x2d`) and are valid in unit names (systemd.unit(5)): this is a top-level slice,
 * beside system.slice and user.slice.
 */
export const SESSIONS_SLICE = 'opencode_pty_sessions.slice';
/** The sessions slice installs before this one wrote, and the parents systemd made for it from its dashes. */
export const OLD_SESSIONS_SLICE = 'opencode-pty-sessions.slice';
export const OLD_SESSIONS_PARENT_SLICES = ['opencode-pty.slice', 'opencode.slice'] as const;
/** The slice systemd makes for the instances of our service template (system-<escaped template name>.slice):
 * it holds nothing else, so uninstall stops it. */
export const BROKER_SLICE = 'system-opencode\\x2dpty\\x2dsupervisor.slice';
/** The drop-in name install writes beside both the socket unit and the client's unit. */
export const SOCKET_DROP_IN = 'opencode-pty-socket.conf';
export const DEFAULT_SOCKET_GROUP = 'opencode-pty';
export const DEFAULT_CLIENT_UNIT = 'opencode.service';

export interface Layout {
  /** Versioned bundles live below it, plus `current` and the install record. */
  libDir: string;
  configDir: string;
  unitDir: string;
}

export const DEFAULT_LAYOUT: Layout = {
  libDir: '/usr/lib/opencode-pty',
  configDir: '/etc/opencode-pty',
  unitDir: '/etc/systemd/system',
};

export const paths = {
  current: (layout: Layout) => `${layout.libDir}/current`,
  record: (layout: Layout) => `${layout.libDir}/installed.json`,
  version: (layout: Layout, name: string) => `${layout.libDir}/${name}`,
  config: (layout: Layout) => `${layout.configDir}/config.json`,
  configReadme: (layout: Layout) => `${layout.configDir}/README`,
  unit: (layout: Layout, name: string) => `${layout.unitDir}/${name}`,
  dropInDir: (layout: Layout, unit: string) => `${layout.unitDir}/${unit}.d`,
  dropIn: (layout: Layout, unit: string) => `${layout.unitDir}/${unit}.d/${SOCKET_DROP_IN}`,
};

/** What install wrote, so uninstall removes exactly that and verify knows what to check. */
export interface InstallRecord {
  format: 1;
  /** The version directory's name (`VERSION-HASH`) that `current` and the unit point at. */
  current: string;
  /** Every version directory still on disk (a running broker may use an older one). */
  versions: string[];
  /** Files install generated (units, drop-ins, config), with the sha256 it wrote. */
  files: Record<string, string>;
  /** Directories install created, removed by uninstall when empty. */
  dirs: string[];
  /** The socket group, if install created it. */
  createdGroup: string | null;
  clientUnit: string;
  /** The client account installed for (records written before it was kept lack it). */
  clientUser?: string;
  socketGroup: string;
  nodePath: string;
  unitPrefix: string;
  /** Slices our units made systemd start (records written before it was kept lack it: legacySlices). Uninstall
   * stops each that holds no unit install did not create. */
  slices?: string[];
}

/** The slices an install recorded, or for a record without the list, the ones the old default's name made. */
export function recordedSlices(record: InstallRecord): string[] {
  return record.slices ?? [OLD_SESSIONS_SLICE, ...OLD_SESSIONS_PARENT_SLICES, BROKER_SLICE];
}
