// The working directory, entered in the unit's own mount namespace (docs/security.md "Known limits"
// had it open for the hardened profile). The START's descriptor was opened in the client's mount
// namespace: `..` from it walks the client's tree, where none of the unit's mounts exist
// (InaccessiblePaths=, the private /tmp), so a program could reach a hidden socket as
// ../../run/user/U/bus or the client's /tmp as ../../tmp. So the helper opens the directory again at
// the path root read for the descriptor, in its own namespace, and goes on only if that is the very
// same directory (device and inode): a path that leads elsewhere (a symlink swapped since START, a
// directory only the client's namespace has) is a refusal, never another tree.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helper.h"
#include "landlock.h"

// At or below `dir` ("/tmp" holds "/tmp/x", not "/tmpx").
static bool at_or_below(const char *path, const char *dir) {
  size_t len = strlen(dir);
  return strncmp(path, dir, len) == 0 && (path[len] == '\0' || path[len] == '/');
}

// What the unit's namespace does to the path, when it is one PrivateTmp= replaces.
static const char *private_tmp_note(const char *path) {
  if (!at_or_below(path, "/tmp") && !at_or_below(path, "/var/tmp")) return "";
  return " (the session has a /tmp and /var/tmp of its own, PrivateTmp=: a directory under the client's is not there)";
}

// No symlink is followed on the way (landlock_open_exact): root's path is a readlink of the START's
// descriptor, which names none, while a component swapped for a link to /proc/self/fd/N (a magic link,
// which crosses mount namespaces) would reach this very directory in the client's tree, passing the
// device and inode check with `..` leading out of the unit's mounts.
int cwd_reenter(const char *path, int cwd, char *why, size_t size) {
  struct stat given, found;
  int at = landlock_open_exact(path);
  int fd = at < 0 ? -1 : openat(at, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int err = errno;
  if (at >= 0) close(at);
  if (fd < 0) {
    snprintf(why, size, "the working directory is not at %s in the session's mount namespace: %s%s%s", path, strerror(err),
             err == ELOOP ? " (a symbolic link on its way, which is never followed)" : "", private_tmp_note(path));
    return -1;
  }
  if (fstat(cwd, &given) < 0 || fstat(fd, &found) < 0 || given.st_dev != found.st_dev || given.st_ino != found.st_ino) {
    snprintf(why, size, "%s in the session's mount namespace is not the START's working directory%s", path, private_tmp_note(path));
    close(fd);
    return -1;
  }
  return fd;
}
