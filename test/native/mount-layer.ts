// What PID 1 builds for a workspace unit, built for a helper run as a plain child (root): a private mount
// namespace where the workspace is a writable mount of its own (ReadWritePaths=) and /run/user an empty
// read-only file system (TemporaryFileSystem=/run/user:ro); `extra` shell commands run before the helper.

/** A `wrap` for HelperRun: the helper's path and argv follow it. */
export function mountLayer(workspace: string, extra: string[] = [], { workspaceMount = true, runtimeCover = true } = {}): string[] {
  const steps = [
    ...(workspaceMount ? ['mount --bind "$0" "$0"'] : []),
    ...(runtimeCover ? ['mount -t tmpfs -o ro none /run/user'] : []),
    ...extra,
    'exec "$@"',
  ];
  return ['unshare', '-m', '--propagation', 'private', 'sh', '-c', steps.join(' && '), workspace];
}
