// What PID 1 builds for a workspace unit, built for a helper run as a plain child (root): a private mount
// namespace where every mount is read-only but the API file systems and /tmp and /var/tmp
// (ProtectSystem=strict), the workspace is a writable mount of its own (ReadWritePaths=) and /run/user
// an empty read-only file system (TemporaryFileSystem=/run/user:ro), /dev/shm an empty tmpfs of its own
// (TemporaryFileSystem=/dev/shm); `extra` shell commands run before the helper.

/** Every mount but those strict leaves writable, read-only (a bind mount keeps its source's flags). */
const STRICT = [
  'for m in $(awk \'{print $5}\' /proc/self/mountinfo | sort -u); do',
  'case "$m" in /dev|/dev/*|/proc|/proc/*|/sys|/sys/*|/tmp|/tmp/*|/var/tmp|/var/tmp/*) ;; *) mount -o remount,bind,ro "$m" 2>/dev/null;; esac;',
  'done; true',
].join(' ');

/** A `wrap` for HelperRun: the helper's path and argv follow it. */
export function mountLayer(workspace: string, extra: string[] = [], { workspaceMount = true, runtimeCover = true, shmCover = true } = {}): string[] {
  const steps = [
    STRICT,
    ...(workspaceMount ? ['mount --bind "$0" "$0"', 'mount -o remount,bind,rw "$0"'] : []),
    ...(runtimeCover ? ['mount -t tmpfs -o ro none /run/user'] : []),
    ...(shmCover ? ['mount -t tmpfs -o mode=1777,nosuid,nodev none /dev/shm'] : []),
    ...extra,
    'exec "$@"',
  ];
  return ['unshare', '-m', '--propagation', 'private', 'sh', '-c', steps.join(' && '), workspace];
}
