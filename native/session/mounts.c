// The workspace profile's mount layer, checked by the helper on its own descriptors before the fork
// (docs/security.md "The workspace profile"). Landlock up to ABI 7 does not govern metadata (chmod,
// chown, utimes, setxattr by path), so PID 1 mounts everything read-only (ProtectSystem=strict,
// ProtectHome=read-only) but the workspace (ReadWritePaths=) and the private /tmp. PID 1 resolves those
// paths when the unit starts, so what it bound may not be what root saw: whatever it did, the workspace
// must now be a writable mount whose root is the START's directory, no mount may lie below it but the
// expected ones, and the unit's namespace must exist at all (systemd goes on without one where it
// cannot build it, unless a setting insists: TemporaryFileSystem= does). Any doubt ends the start.
// Sources: statx(2) STATX_ATTR_MOUNT_ROOT, proc(5) /proc/self/mountinfo, systemd.exec(5) "Sandboxing".
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "landlock.h"

#ifndef STATX_ATTR_MOUNT_ROOT
#define STATX_ATTR_MOUNT_ROOT 0x2000
#endif

// 1 when `fd` (or `path` beneath it) is the root of a mount, 0 when not, -1 (errno) when unknown.
static int mount_root(int dirfd, const char *path) {
  struct statx stx;
  if (statx(dirfd, path, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW | AT_STATX_DONT_SYNC, STATX_BASIC_STATS, &stx) < 0) return -1;
  if (!(stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT)) {
    errno = EOPNOTSUPP;
    return -1;
  }
  return (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
}

// mountinfo's octal escapes (\040 for a space, \011, \012, \134) undone in place.
static void unescape(char *s) {
  char *out = s;
  for (char *in = s; *in; out++) {
    if (in[0] == '\\' && in[1] >= '0' && in[1] <= '3' && in[2] >= '0' && in[2] <= '7' && in[3] >= '0' && in[3] <= '7') {
      *out = (char)((in[1] - '0') * 64 + (in[2] - '0') * 8 + (in[3] - '0'));
      in += 4;
    } else {
      *out = *in++;
    }
  }
  *out = '\0';
}

// A mount point strictly below the workspace that is expected there: its .git bind (--readonly-git) and
// an operator's writable path, which is writable anyway.
static bool expected_below(const struct landlock_plan *plan, const char *point, size_t base) {
  if (plan->git && strcmp(point + base, "/.git") == 0) return true;
  for (size_t i = 0; i < plan->count; i++)
    if (plan->writable[i] && strcmp(point, plan->paths[i]) == 0) return true;
  return false;
}

// `point` is `base` or lies below it.
static bool at_or_below(const char *point, const char *base) {
  size_t n = strlen(base);
  return strncmp(point, base, n) == 0 && (point[n] == '\0' || point[n] == '/' || (n == 1 && base[0] == '/'));
}

// Where the unit may have a writable mount: the API file systems (ProtectSystem=strict leaves them),
// the private /tmp and /var/tmp, the workspace and the operator's write paths. Anything else writable
// is something PID 1 bound where root did not mean it (an operator's path whose component the user
// swapped for a symlink when the unit started) or a host whose layout strict did not cover.
static bool writable_expected(const struct landlock_plan *plan, const char *point) {
  static const char *const api[] = {"/dev", "/proc", "/sys", "/tmp", "/var/tmp"};
  for (size_t i = 0; i < sizeof api / sizeof api[0]; i++)
    if (at_or_below(point, api[i])) return true;
  if (at_or_below(point, plan->workspace)) return true;
  for (size_t i = 0; i < plan->count; i++)
    if (plan->writable[i] && at_or_below(point, plan->paths[i])) return true;
  return false;
}

// Another mount below the workspace would carry the workspace's write rule (and Landlock's, which
// follows the path across mounts) into whatever it shows: a bind of the home there makes the home
// writable. Only the expected ones may be there. And no writable mount may be anywhere unexpected.
static int check_mounts(const struct landlock_plan *plan, char *why, size_t size) {
  FILE *f = fopen("/proc/self/mountinfo", "re");
  if (!f) {
    snprintf(why, size, "cannot read the session's mounts: %s", strerror(errno));
    return -1;
  }
  size_t base = strlen(plan->workspace);
  char *line = NULL;
  size_t cap = 0;
  int rc = 0;
  while (rc == 0 && getline(&line, &cap, f) >= 0) {
    // "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS ...": the fifth and sixth fields.
    char *save = NULL, *field = strtok_r(line, " ", &save);
    for (int k = 1; field && k < 5; k++) field = strtok_r(NULL, " ", &save);
    char *options = field ? strtok_r(NULL, " ", &save) : NULL;
    if (!options) continue;
    unescape(field);
    bool writable = strncmp(options, "rw", 2) == 0 && (options[2] == ',' || options[2] == '\0');
    if (strncmp(field, plan->workspace, base) == 0 && field[base] == '/' && !expected_below(plan, field, base)) {
      snprintf(why, size, "a mount at %s lies inside the workspace", field);
      rc = -1;
    } else if (writable && !writable_expected(plan, field)) {
      snprintf(why, size, "the session has a writable mount at %s, which it should not", field);
      rc = -1;
    }
  }
  free(line);
  fclose(f);
  return rc;
}

int mounts_check_workspace(const struct landlock_plan *plan, int cwd, char *why, size_t size) {
  struct statvfs vfs;
  int root = mount_root(cwd, "");
  if (root < 0) {
    snprintf(why, size, "cannot tell whether the workspace is a mount of its own: %s", strerror(errno));
    return -1;
  }
  if (!root) {
    snprintf(why, size, "%s is not the writable mount the session needs (ReadWritePaths=)", plan->workspace);
    return -1;
  }
  if (fstatvfs(cwd, &vfs) < 0 || (vfs.f_flag & ST_RDONLY)) {
    snprintf(why, size, "%s is not on a writable mount", plan->workspace);
    return -1;
  }
  return check_mounts(plan, why, size);
}

// "DEV:INO", both decimal and at most 20 digits.
static bool parse_key(const char *value, uint64_t *dev, uint64_t *ino) {
  const char *colon = strchr(value, ':');
  if (!colon || colon == value || colon[1] == '\0' || strspn(value, "0123456789") != (size_t)(colon - value) ||
      strspn(colon + 1, "0123456789") != strlen(colon + 1) || strlen(colon + 1) > 20 || (size_t)(colon - value) > 20)
    return false;
  *dev = strtoull(value, NULL, 10);
  *ino = strtoull(colon + 1, NULL, 10);
  return true;
}

bool mounts_plan_tmp(struct landlock_plan *plan, const char *value) {
  return plan->tmp = parse_key(value, &plan->tmp_dev, &plan->tmp_ino);
}

bool mounts_plan_shm(struct landlock_plan *plan, const char *value) {
  return plan->shm = parse_key(value, &plan->shm_dev, &plan->shm_ino);
}

bool mounts_plan_bind(struct landlock_plan *plan, const char *value) {
  // DEV:INO:PATH, where PATH (absolute) holds no ':' (a unit file could not carry one: unit-properties.ts).
  const char *second = strchr(value, ':');
  second = second ? strchr(second + 1, ':') : NULL;
  if (!second || second[1] != '/' || plan->binds >= MAX_HOME_BINDS || (size_t)(second - value) > 41) return false;
  char key[42];
  memcpy(key, value, (size_t)(second - value));
  key[second - value] = '\0';
  size_t n = plan->binds;
  if (!parse_key(key, &plan->bind_dev[n], &plan->bind_ino[n])) return false;
  plan->bind_paths[n] = second + 1;
  plan->binds++;
  return true;
}

// Each operator's path bound back into the covered home is the directory root saw at START, reached
// without a symlink and the root of a mount: PID 1 resolved the bind by path when the unit started,
// through whatever the user had put on its way since (a symlink to ~/.ssh), which the helper's own
// no-symlink walk would not see inside the bind. The path up to it lies on the read-only cover.
static int check_binds(const struct landlock_plan *plan, char *why, size_t size) {
  for (size_t i = 0; i < plan->binds; i++) {
    struct stat st;
    int fd = landlock_open_exact(plan->bind_paths[i]);
    bool same = fd >= 0 && fstat(fd, &st) == 0 && (uint64_t)st.st_dev == plan->bind_dev[i] && (uint64_t)st.st_ino == plan->bind_ino[i] && mount_root(fd, "") == 1;
    if (fd >= 0) close(fd);
    if (!same) {
      snprintf(why, size, "%s in the session's mount namespace is not the directory the supervisor saw at START", plan->bind_paths[i]);
      return -1;
    }
  }
  return 0;
}

// True when the directory `fd` holds nothing but "." and "..".
static bool empty_dir(int fd) {
  int copy = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *dir = copy < 0 ? NULL : fdopendir(copy);
  if (!dir) {
    if (copy >= 0) close(copy);
    return false;
  }
  bool empty = true;
  for (struct dirent *entry; empty && (entry = readdir(dir));)
    empty = strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0;
  closedir(dir);
  return empty;
}

// The host's /dev/shm is one tmpfs for every process of the account: Landlock keeps its files unopened,
// but not their metadata (chmod, utimes by path), and without it POSIX shared memory fails. So the unit
// has its own (TemporaryFileSystem=/dev/shm, session-profile.ts), and only that one is granted: a mount
// of its own, tmpfs, root's, empty before the fork, on another file system (st_dev, the superblock)
// than the client's /dev/shm as root read it from the START's descriptor: a bind of the host's, or of
// a directory in it, shares its device. Sources: statfs(2) TMPFS_MAGIC, systemd.exec(5) TemporaryFileSystem=.
int mounts_open_shm(const struct landlock_plan *plan, char *why, size_t size) {
  int fd = open("/dev/shm", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  struct statfs fs;
  const char *wrong = NULL;
  if (fd < 0 || fstat(fd, &st) < 0 || fstatfs(fd, &fs) < 0) wrong = strerror(errno);
  else if (mount_root(fd, "") != 1) wrong = "it is not a mount of its own";
  else if (fs.f_type != TMPFS_MAGIC) wrong = "it is not a tmpfs";
  else if (st.st_uid != 0 || (st.st_mode & 07777) != 01777) wrong = "it is not root's, mode 1777";
  else if (plan->shm && (uint64_t)st.st_dev == plan->shm_dev) wrong = "it is the client's";
  else if (!empty_dir(fd)) wrong = "it is not empty";
  if (!wrong) return fd;
  snprintf(why, size, "the session's mount namespace is missing (/dev/shm is not its own: %s)", wrong);
  if (fd >= 0) close(fd);
  return -1;
}

// `path`, reached without a symlink on its way, is a read-only tmpfs mounted there (what
// TemporaryFileSystem=PATH:ro makes; PID 1 follows symlinks, so a home whose path a user could bend
// elsewhere is not taken as covered).
static bool covered(const char *path) {
  struct statfs fs;
  struct statvfs vfs;
  int fd = landlock_open_exact(path);
  bool ok = fd >= 0 && mount_root(fd, "") == 1 && fstatfs(fd, &fs) == 0 && fs.f_type == TMPFS_MAGIC && fstatvfs(fd, &vfs) == 0 && (vfs.f_flag & ST_RDONLY);
  if (fd >= 0) close(fd);
  return ok;
}

// The unit's namespace must be there: /run/user an empty read-only mount of its own
// (TemporaryFileSystem=/run/user:ro, so this account's bus and agents are not), the home covered the
// same way (its path sockets: an ssh ControlMaster's, gpg's; the workspace is bound back into it and
// cwd_reenter() (cwd.c) checked it is the START's directory), and /tmp not the client's (PrivateTmp=; root
// read the client's /tmp from the START descriptor's root).
int mounts_check_namespace(const struct landlock_plan *plan, char *why, size_t size) {
  char own[64];
  snprintf(own, sizeof own, "/run/user/%u", (unsigned)getuid());
  if (!covered("/run/user") || access(own, F_OK) == 0) {
    snprintf(why, size, "%s", "the session's mount namespace is missing (/run/user is not hidden)");
    return -1;
  }
  if (plan->home && !covered(plan->home)) {
    snprintf(why, size, "the session's mount namespace is missing (%s is not hidden)", plan->home);
    return -1;
  }
  if (check_binds(plan, why, size) < 0) return -1;
  struct stat st;
  if (!plan->tmp) return 0;
  if (stat("/tmp", &st) < 0 || ((uint64_t)st.st_dev == plan->tmp_dev && (uint64_t)st.st_ino == plan->tmp_ino)) {
    snprintf(why, size, "%s", "the session's mount namespace is missing (/tmp is not its own)");
    return -1;
  }
  return 0;
}
