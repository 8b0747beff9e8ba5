// The workspace profile's Landlock confinement (landlock.c).
#ifndef OPENCODE_PTY_SESSION_LANDLOCK_H
#define OPENCODE_PTY_SESSION_LANDLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// ABI 6: the scopes for signals and abstract Unix sockets. An older kernel is a refusal.
// 96: the built-in paths (14) and the configuration's 32 + 32 (src/config/schema.ts) with room to spare.
// 64: the configuration's read and write paths (32 + 32, src/config/schema.ts), each bound at most once.
enum { LANDLOCK_MIN_ABI = 6, MAX_LANDLOCK_PATHS = 96, MAX_HOME_BINDS = 64 };

// --landlock with its --landlock-read=PATH and --landlock-write=PATH options, in order.
struct landlock_plan {
  bool on;
  const char *workspace; // --cwd-path: where the START's directory is in the unit's mount namespace (required)
  bool git;              // --readonly-git=DEV:INO: the workspace's .git as root saw it, bound read-only by PID 1
  uint64_t git_dev, git_ino;
  bool tmp;              // --client-tmp=DEV:INO: the client's /tmp, which the unit's /tmp must not be (mounts.c)
  uint64_t tmp_dev, tmp_ino;
  const char *home;      // --home-cover: the account's home, which must be covered by a read-only tmpfs (mounts.c)
  size_t binds;          // --home-bind=DEV:INO:PATH: an operator's path PID 1 bound back into the covered home
  const char *bind_paths[MAX_HOME_BINDS];
  uint64_t bind_dev[MAX_HOME_BINDS], bind_ino[MAX_HOME_BINDS];
  bool shm;              // --client-shm=DEV:INO: the client's /dev/shm, whose file system the unit's must not be (mounts.c)
  uint64_t shm_dev, shm_ino;
  size_t count;
  const char *paths[MAX_LANDLOCK_PATHS];
  bool writable[MAX_LANDLOCK_PATHS];
  bool exact[MAX_LANDLOCK_PATHS]; // the operator's: opened without following any symlink on the way
};

// The kernel's Landlock ABI, or -errno (ENOSYS: not built; EOPNOTSUPP: disabled at boot).
int landlock_abi(void);
// False when the path is not absolute or the plan is full. `exact`: no symlink may be on its way.
bool landlock_plan_add(struct landlock_plan *plan, const char *value, bool writable, bool exact);
// "DEV:INO" in decimal into the plan's .git identity: false when malformed.
bool landlock_plan_git(struct landlock_plan *plan, const char *value);
// The .git in `cwd` (entered in the unit's namespace) is the file root saw, on a read-only mount:
// 0, or -1 with `why` said. Nothing to check without --readonly-git.
int landlock_check_git(const struct landlock_plan *plan, int cwd, char *why, size_t size);
// `path` opened O_PATH (close-on-exec) one component at a time, no symlink followed (ELOOP): -1 (errno).
int landlock_open_exact(const char *path);
// The ruleset's fd (close-on-exec), or -1 with `why` said. `shm`: the unit's own /dev/shm, checked
// (mounts_open_shm()), granted as a writable tree by that descriptor.
int landlock_build(const struct landlock_plan *plan, int cwd, int shm, char *why, size_t size);
// The session's own terminal, by its descriptor: -1 (errno) on failure.
int landlock_add_terminal(int ruleset, int slave);
// no_new_privs, then the ruleset on the calling thread's process: -1 (errno) on failure.
int landlock_enforce(int ruleset);

// mounts.c: the workspace (entered, `cwd`) is a writable mount of its own with nothing unexpected
// mounted below it: 0, or -1 with `why` said.
int mounts_check_workspace(const struct landlock_plan *plan, int cwd, char *why, size_t size);
// "DEV:INO" in decimal into the plan's client /tmp identity: false when malformed.
bool mounts_plan_tmp(struct landlock_plan *plan, const char *value);
// The same for the client's /dev/shm.
bool mounts_plan_shm(struct landlock_plan *plan, const char *value);
// "DEV:INO:PATH" (PATH absolute) into the plan's binds: false when malformed or the plan is full.
bool mounts_plan_bind(struct landlock_plan *plan, const char *value);
// /dev/shm opened (close-on-exec) and checked to be the unit's own: an empty tmpfs mounted there by
// root, on another file system than the client's /dev/shm. Its fd, or -1 with `why` said.
int mounts_open_shm(const struct landlock_plan *plan, char *why, size_t size);
// The unit's mount namespace is there (/run/user and the home covered, /tmp not the client's): 0, or -1 with `why`.
int mounts_check_namespace(const struct landlock_plan *plan, char *why, size_t size);

#endif
