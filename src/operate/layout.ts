// Where an installation lives and what its parts are called: one place for every path the operator commands touch.
export const PROJECT_PREFIX = 'opencode-pty-';
export const SOCKET_UNIT = 'opencode-pty-supervisor.socket';
export const SERVICE_TEMPLATE = 'opencode-pty-supervisor@.service';
export const BROKER_UNIT = 'opencode-pty-supervisor@broker.service';
export const SESSIONS_SLICE = 'opencode-pty-sessions.slice';
/** A dash in a slice name is a level of the tree: systemd creates this parent for it. */
export const SESSIONS_PARENT_SLICE = 'opencode-pty.slice';
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
}
