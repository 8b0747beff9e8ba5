// Whether this host can run the sandbox at all, as one reason people can act on.
import { existsSync } from 'node:fs';
import { hostCgroup2Mount } from './cgroup.ts';

export const SYSTEMD = '/lib/systemd/systemd';
const TOOLS = ['/usr/bin/unshare', '/usr/bin/nsenter', '/usr/bin/setpriv', '/usr/bin/script', '/usr/bin/dbus-daemon', '/usr/bin/busctl', '/usr/bin/ss'];

/** Why the sandbox cannot run here, or undefined when it can. */
export function sandboxUnavailable(): string | undefined {
  if (process.platform !== 'linux') return 'integration tests need Linux';
  if (process.getuid?.() !== 0) return 'integration tests need root';
  if (!existsSync(SYSTEMD)) return `systemd is not installed (${SYSTEMD})`;
  const missing = TOOLS.filter((tool) => !existsSync(tool));
  if (missing.length) return `missing tools: ${missing.join(', ')} (util-linux, bsdutils, dbus, systemd)`;
  if (!hostCgroup2Mount()) return 'no cgroup2 file system is mounted';
  return undefined;
}
