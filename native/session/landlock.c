// The workspace profile's confinement (docs/security.md "The workspace profile"): a Landlock ruleset
// built from the helper's own descriptors (the START directory itself is the writable tree's parent,
// so no path is resolved for it), enforced on the helper before it reads a byte of the program's output
// and again in the child before execve (a nested domain: the program cannot signal its helper). Any
// failure is the session's refusal before the fork: the program never runs unconfined.
// Source: Documentation/userspace-api/landlock.rst, include/uapi/linux/landlock.h (Linux 6.12+).
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "landlock.h"

// Our own copies of the ABI's constants: the build host's headers may predate ABI 6.
#define LL_CREATE_RULESET_VERSION (1U << 0)
#define LL_RULE_PATH_BENEATH 1
#define LL_FS_EXECUTE (1ULL << 0)
#define LL_FS_WRITE_FILE (1ULL << 1)
#define LL_FS_READ_FILE (1ULL << 2)
#define LL_FS_READ_DIR (1ULL << 3)
#define LL_FS_REMOVE_DIR (1ULL << 4)
#define LL_FS_REMOVE_FILE (1ULL << 5)
#define LL_FS_MAKE_CHAR (1ULL << 6)
#define LL_FS_MAKE_DIR (1ULL << 7)
#define LL_FS_MAKE_REG (1ULL << 8)
#define LL_FS_MAKE_SOCK (1ULL << 9)
#define LL_FS_MAKE_FIFO (1ULL << 10)
#define LL_FS_MAKE_BLOCK (1ULL << 11)
#define LL_FS_MAKE_SYM (1ULL << 12)
#define LL_FS_REFER (1ULL << 13)    // ABI 2
#define LL_FS_TRUNCATE (1ULL << 14) // ABI 3
#define LL_FS_IOCTL_DEV (1ULL << 15) // ABI 5
#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) // ABI 6
#define LL_SCOPE_SIGNAL (1ULL << 1)               // ABI 6

// Every file-system right up to ABI 5 is handled: a right not handled is not restricted at all.
#define LL_FS_ALL ((LL_FS_IOCTL_DEV << 1) - 1)
// What a file (not a directory) can be granted; a rule with more is EINVAL.
#define LL_FS_FILE (LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE | LL_FS_TRUNCATE | LL_FS_IOCTL_DEV)
#define LL_READ (LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_READ_DIR)
// A writable tree: everything but device nodes (mknod needs a capability anyway).
#define LL_WRITE (LL_FS_ALL & ~(LL_FS_MAKE_CHAR | LL_FS_MAKE_BLOCK | LL_FS_IOCTL_DEV))
#define LL_DEVICE (LL_FS_READ_FILE | LL_FS_WRITE_FILE | LL_FS_TRUNCATE | LL_FS_IOCTL_DEV)

struct ruleset_attr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net; // ABI 4; network rules are not this profile's (0: none handled)
  uint64_t scoped;             // ABI 6
};

struct path_beneath_attr {
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));

// The devices a terminal session needs, besides its own terminal (added by descriptor).
static const char *const devices[] = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"};

int landlock_abi(void) {
  long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
  return abi < 0 ? -errno : (int)abi;
}

bool landlock_plan_add(struct landlock_plan *plan, const char *value, bool writable, bool exact) {
  if (value[0] != '/' || plan->count >= MAX_LANDLOCK_PATHS) return false;
  plan->paths[plan->count] = value;
  plan->writable[plan->count] = writable;
  plan->exact[plan->count] = exact;
  plan->count++;
  return true;
}

static int add_rule(int ruleset, int fd, uint64_t access) {
  struct stat st;
  if (fstat(fd, &st) < 0) return -1;
  struct path_beneath_attr rule = {.allowed_access = S_ISDIR(st.st_mode) ? access : access & LL_FS_FILE, .parent_fd = fd};
  return (int)syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &rule, 0);
}

// `path` opened O_PATH one component at a time, none followed if it is a symlink (ELOOP then). Not
// openat2(RESOLVE_NO_SYMLINKS): systemd's RestrictSUIDSGID= filter answers openat2 with ENOSYS, since
// it cannot inspect the flags in its struct (systemd src/shared/seccomp-util.c).
int landlock_open_exact(const char *path) {
  char copy[4096];
  if (strlen(path) >= sizeof copy) {
    errno = ENAMETOOLONG;
    return -1;
  }
  strcpy(copy, path);
  int current = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  char *save = NULL;
  for (char *part = strtok_r(copy, "/", &save); part && current >= 0; part = strtok_r(NULL, "/", &save)) {
    struct stat st;
    int next = strcmp(part, "..") == 0 ? (errno = EINVAL, -1) : openat(current, part, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    int err = errno;
    close(current);
    if (next >= 0 && fstat(next, &st) == 0 && S_ISLNK(st.st_mode)) {
      close(next);
      next = -1;
      err = ELOOP;
    }
    errno = err;
    current = next;
  }
  return current;
}

// A path the operator or the built-in list names: opened by the helper (as the user), O_PATH. One that
// does not exist, or cannot be reached, grants nothing (narrower, never wider); a rule that fails is a failure.
// `exact` (the operator's paths, which may lie where the user can swap a component for a symlink, as
// ~/.cache/x): no symlink is followed on the way, so one grants nothing. The built-in system paths are
// root's, and some are symlinks on merged-/usr systems (/bin, /lib).
static int add_path(int ruleset, const char *path, uint64_t access, bool exact, char *why, size_t size) {
  int fd = exact ? landlock_open_exact(path) : open(path, O_PATH | O_CLOEXEC);
  if (fd < 0) return 0;
  int rc = add_rule(ruleset, fd, access);
  int err = errno;
  close(fd);
  if (rc < 0) snprintf(why, size, "Landlock rule for %s: %s", path, strerror(err));
  return rc < 0 ? -1 : 0;
}

bool landlock_plan_git(struct landlock_plan *plan, const char *value) {
  const char *colon = strchr(value, ':');
  if (!colon || colon == value || colon[1] == '\0' || strspn(value, "0123456789") != (size_t)(colon - value) ||
      strspn(colon + 1, "0123456789") != strlen(colon + 1) || strlen(colon + 1) > 20 || (size_t)(colon - value) > 20)
    return false;
  plan->git_dev = strtoull(value, NULL, 10);
  plan->git_ino = strtoull(colon + 1, NULL, 10);
  plan->git = true;
  return true;
}

// Landlock cannot take a right away inside the workspace, so .git is a read-only bind mount PID 1 made
// from a path (BindReadOnlyPaths=): whatever it bound, it must be the .git root saw at START (not a
// symlink, not one swapped in since) and read-only, or nothing runs.
int landlock_check_git(const struct landlock_plan *plan, int cwd, char *why, size_t size) {
  if (!plan->git) return 0;
  struct stat st;
  struct statvfs vfs;
  int fd = openat(cwd, ".git", O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    snprintf(why, size, "cannot keep .git read-only: %s", strerror(errno));
    return -1;
  }
  int rc = fstat(fd, &st) == 0 && fstatvfs(fd, &vfs) == 0 ? 0 : -1;
  if (rc < 0) snprintf(why, size, "cannot keep .git read-only: %s", strerror(errno));
  else if ((uint64_t)st.st_dev != plan->git_dev || (uint64_t)st.st_ino != plan->git_ino) {
    snprintf(why, size, "%s", ".git is not the one the supervisor saw at START");
    rc = -1;
  } else if (!(vfs.f_flag & ST_RDONLY)) {
    snprintf(why, size, "%s", ".git is not on a read-only mount");
    rc = -1;
  }
  close(fd);
  return rc;
}

int landlock_build(const struct landlock_plan *plan, int cwd, int shm, char *why, size_t size) {
  int abi = landlock_abi();
  if (abi < 0) {
    snprintf(why, size, "the workspace profile needs Landlock, which this kernel does not offer (%s)", strerror(-abi));
    return -1;
  }
  if (abi < LANDLOCK_MIN_ABI) {
    snprintf(why, size, "the workspace profile needs Landlock ABI %d (signal and abstract socket scopes); this kernel has ABI %d", LANDLOCK_MIN_ABI, abi);
    return -1;
  }
  struct ruleset_attr attr = {.handled_access_fs = LL_FS_ALL, .scoped = LL_SCOPE_SIGNAL | LL_SCOPE_ABSTRACT_UNIX_SOCKET};
  int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
  if (ruleset < 0) {
    snprintf(why, size, "Landlock ruleset: %s", strerror(errno));
    return -1;
  }
  // The working directory by its descriptor: exactly the tree the client opened, nothing resolved now.
  if (add_rule(ruleset, cwd, LL_WRITE) < 0) {
    snprintf(why, size, "Landlock rule for the working directory: %s", strerror(errno));
    goto fail;
  }
  for (size_t i = 0; i < sizeof devices / sizeof devices[0]; i++)
    if (add_path(ruleset, devices[i], LL_DEVICE, false, why, size) < 0) goto fail;
  // POSIX shared memory and semaphores (shm_open, sem_open): the unit's own empty /dev/shm, by the
  // descriptor mounts_open_shm() checked, so no path is resolved again for it.
  if (shm >= 0 && add_rule(ruleset, shm, LL_WRITE) < 0) {
    snprintf(why, size, "Landlock rule for /dev/shm: %s", strerror(errno));
    goto fail;
  }
  for (size_t i = 0; i < plan->count; i++)
    if (add_path(ruleset, plan->paths[i], plan->writable[i] ? LL_WRITE : LL_READ, plan->exact[i], why, size) < 0) goto fail;
  return ruleset;
fail:
  close(ruleset);
  return -1;
}

int landlock_add_terminal(int ruleset, int slave) {
  return add_rule(ruleset, slave, LL_DEVICE);
}

int landlock_enforce(int ruleset) {
  // restrict_self needs no_new_privs (or CAP_SYS_ADMIN); the unit sets NoNewPrivileges= too.
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) return -1;
  return (int)syscall(SYS_landlock_restrict_self, ruleset, 0);
}
