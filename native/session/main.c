// Session helper: runs one program on its own terminal inside the session's unit, as the client's
// user, and speaks the data phase of the protocol with the client itself (privilege separation:
// root authenticates, the user's own process handles the user's bytes).
//
// Usage: opencode-pty-session --landlock-abi (prints the kernel's Landlock ABI and exits)
//        opencode-pty-session --warm
//        opencode-pty-session [--env-from-control] [--protocol=N] [--write-timeout-ms=N] [--stop-timeout-sec=N]
//                             [--program-oom-score-adj=N]
//                             [--keep --session-id=ID [--retain-bytes=N] [--max-observers=N]]
//                             [--cwd-path=PATH] [--landlock [--home-cover=PATH] [--home-bind=DEV:INO:PATH]... [--readonly-git=DEV:INO] [--client-tmp=DEV:INO] [--client-shm=DEV:INO] [--landlock-read[-exact]=PATH]... [--landlock-write=PATH]...]
//                             ROWS COLS PROGRAM [ARGS...]
//   --env-from-control: the program's environment is the control channel's first message (ENV), not
//   the helper's own (the worker always passes it, so the client's variables never apply to the helper)
//   --stop-timeout-sec: session.stopTimeoutSec, the time between the steps of an end the helper drives
//   itself (child.c; 5 s, the configuration's default, when absent)
//   --keep: a kept session (protocol version 3 or later; keep.h): its output is retained in a ring of
//   --retain-bytes (4096..64 MiB, 2 MiB when absent), other connections come with ATTACH (up to
//   --max-observers observers, 0..16, 4 when absent), and the session outlives its connections;
//   --session-id (1..2^53-1) is the id ATTACHED names. Each takes its value after "=" or as the next argument.
//   --landlock: the workspace profile (landlock.c): the helper and then the program are confined to the
//   working directory (writable), the --landlock-write paths, and the --landlock-read paths (read and
//   execute); a kernel without it, or any failure to apply it, ends the session before the fork.
//   --cwd-path: where fd 0's directory is in the unit's mount namespace: the helper enters it there,
//   only if it is the same directory (cwd.c), so `..` walks the unit's tree, not the client's. Given for
//   every profile with a mount namespace of its own (hardened, workspace); --landlock needs it.
//   --readonly-git: the .git root saw there, which must be a read-only mount now (landlock_check_git()).
//   --client-tmp: the client's /tmp, which the unit's own must not be (mounts_check_namespace()).
//   --home-cover: the account's home, which must be a read-only tmpfs of its own in the unit (mounts_check_namespace()).
//   --home-bind: an operator's path root found under the home, which the unit must have bound back as that directory (mounts.c check_binds()).
//   --client-shm: the client's /dev/shm, whose file system the unit's own must not be (mounts_open_shm()).
//   --landlock-read-exact: an operator's read path, reached without following a symlink (as every
//   --landlock-write path is). Under --landlock the workspace must be a writable mount of its own with
//   nothing unexpected below it, and the unit's mount namespace must be there (mounts.c).
//   fd 0: the session's working directory (an open directory fd)
//   fd 1: the client's connection; the helper writes to it only after the worker's GO
//   fd 2: the control channel to the worker (control.h); diagnostics travel there too
//   --warm alone: a warm unit's helper (warm.c): fds 0 and 1 are placeholders; the arguments above, the
//   working directory and the client's connection come over the control channel when a START draws it
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "keep.h"
#include "landlock.h"

// Decimal min..max, digits only: no sign, no spaces, nothing strtoul would quietly accept.
static bool parse_number(const char *s, unsigned long min, unsigned long max, unsigned long *value) {
  size_t len = strlen(s);
  if (len == 0 || len > 9 || strspn(s, "0123456789") != len) return false;
  unsigned long v = strtoul(s, NULL, 10);
  if (v < min || v > max) return false;
  *value = v;
  return true;
}

// fds 0-2 as systemd gave them move above 2 (close-on-exec) before anything is opened, and 0-2
// become /dev/null, so no later open() can land on a standard fd by accident.
static int take_fds(struct session *s, struct client *c) {
  close_from(3);
  int cwd = fcntl(0, F_DUPFD_CLOEXEC, 3);
  c->fd = fcntl(1, F_DUPFD_CLOEXEC, 3);
  s->worker.fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (cwd < 0 || c->fd < 0 || s->worker.fd < 0 || null < 0) return -1;
  for (int fd = 0; fd < 3; fd++)
    if (dup2(null, fd) < 0) return -1;
  if (null > 2) close(null);
  return cwd;
}

// A u64 in decimal, min..max, digits only (session ids are above parse_number's nine digits).
static bool parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *value) {
  size_t len = strlen(s);
  if (len == 0 || len > 19 || strspn(s, "0123456789") != len) return false;
  uint64_t v = strtoull(s, NULL, 10);
  if (v < min || v > max) return false;
  *value = v;
  return true;
}

// "--name=VALUE" or "--name" "VALUE": the value, advancing *i past it, or NULL when argv[*i] is not that option.
static const char *option_value(int argc, char **argv, int *i, const char *name) {
  size_t len = strlen(name);
  if (strncmp(argv[*i], name, len) != 0) return NULL;
  if (argv[*i][len] == '=') return argv[*i] + len + 1;
  if (argv[*i][len] != '\0' || *i + 1 >= argc) return NULL;
  return argv[++*i];
}

static void usage(struct session *s, struct client *c) {
  give_up(s, c, 2, "%s",
          "usage: opencode-pty-session [--env-from-control] [--protocol=N] [--write-timeout-ms=N] [--stop-timeout-sec=N] "
          "[--keep --session-id=ID [--retain-bytes=N] [--max-observers=N]] [--cwd-path=PATH] [--landlock [--home-cover=PATH] [--home-bind=DEV:INO:PATH]... [--readonly-git=DEV:INO] [--client-tmp=DEV:INO] [--client-shm=DEV:INO] [--landlock-read[-exact]=PATH]... [--landlock-write=PATH]...] "
          "ROWS COLS PROGRAM [ARGS...]; ROWS and COLS are decimal 1..65535; fd 0 is the working directory, fd 1 the "
          "client, fd 2 the worker");
}

int main(int argc, char **argv) {
  // Before anything else: no process of the same user may ptrace us or take our fds (pidfd_getfd;
  // there is no Yama on the hosts we run on). Installed root-owned 0711, the kernel has made us
  // non-dumpable at exec already (the user cannot read the file); readable, there is a window
  // between exec and this call in which our stdio (the client socket) can be taken, so the broker
  // refuses to run with a helper that is not root-owned 0711. The program we exec is dumpable again.
  if (prctl(PR_SET_DUMPABLE, 0) != 0) return 1;
  // The operator's question (opencode-ptyctl verify), never a session's: the kernel's Landlock ABI, or
  // a negative errno, on stdout.
  if (argc == 2 && strcmp(argv[1], "--landlock-abi") == 0) return printf("%d\n", landlock_abi()) < 0;
  struct session *s = calloc(1, sizeof *s);
  struct client *c = calloc(1, sizeof *c);
  if (!s || !c) return 1;
  s->master = -1;
  s->eof.next = -1;
  s->child.next_step = -1;
  s->worker.passed_fd = -1;
  s->rendezvous = -1;
  s->landlock = -1;
  s->oom_raiser = -1;
  c->stall_since = -1;
  int cwd = take_fds(s, c);
  if (cwd < 0) {
    // Nothing is known to be safe to write to; exit as a failed start does.
    return 1;
  }
  control_send_hello(&s->worker);
  if (argc == 2 && strcmp(argv[1], "--warm") == 0) {
    close(cwd);
    close(c->fd);
    argv = warm_wait(s, argv[0], &argc, &cwd, &c->fd);
  }
  unsigned long version = 1, timeout = 10000, stop_sec = 5, oom_adj = 0, rows, cols;
  bool oom_adj_given = false;
  bool env_from_control = false, keep = false;
  struct landlock_plan landlock = {0};
  const char *cwd_path = NULL;
  uint64_t retain = 2 << 20, max_observers = 4, session_id = 0;
  const char *value;
  int i = 1;
  for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
    if (strcmp(argv[i], "--env-from-control") == 0) {
      env_from_control = true;
      continue;
    }
    if (strcmp(argv[i], "--landlock") == 0) {
      landlock.on = true;
      continue;
    }
    if ((value = option_value(argc, argv, &i, "--landlock-read")) && landlock_plan_add(&landlock, value, false, false)) continue;
    if ((value = option_value(argc, argv, &i, "--landlock-read-exact")) && landlock_plan_add(&landlock, value, false, true)) continue;
    if ((value = option_value(argc, argv, &i, "--landlock-write")) && landlock_plan_add(&landlock, value, true, true)) continue;
    if ((value = option_value(argc, argv, &i, "--client-tmp")) && mounts_plan_tmp(&landlock, value)) continue;
    if ((value = option_value(argc, argv, &i, "--client-shm")) && mounts_plan_shm(&landlock, value)) continue;
    if ((value = option_value(argc, argv, &i, "--home-bind")) && mounts_plan_bind(&landlock, value)) continue;
    if ((value = option_value(argc, argv, &i, "--readonly-git")) && landlock_plan_git(&landlock, value)) continue;
    if ((value = option_value(argc, argv, &i, "--home-cover")) && value[0] == '/' && value[1] != '\0') {
      landlock.home = value;
      continue;
    }
    if ((value = option_value(argc, argv, &i, "--cwd-path")) && value[0] == '/') {
      cwd_path = value;
      continue;
    }
    if (strcmp(argv[i], "--keep") == 0) {
      keep = true;
      continue;
    }
    if ((value = option_value(argc, argv, &i, "--retain-bytes")) && parse_u64(value, MIN_RETAIN, MAX_RETAIN, &retain)) continue;
    if ((value = option_value(argc, argv, &i, "--max-observers")) && parse_u64(value, 0, MAX_OBSERVERS, &max_observers)) continue;
    if ((value = option_value(argc, argv, &i, "--session-id")) && parse_u64(value, 1, ((uint64_t)1 << 53) - 1, &session_id)) continue;
    if (strncmp(argv[i], "--protocol=", 11) == 0 && parse_number(argv[i] + 11, 1, 65535, &version)) continue;
    if (strncmp(argv[i], "--write-timeout-ms=", 19) == 0 && parse_number(argv[i] + 19, 1, 3600000, &timeout)) continue;
    if (strncmp(argv[i], "--stop-timeout-sec=", 19) == 0 && parse_number(argv[i] + 19, 1, 3600, &stop_sec)) continue;
    if (strncmp(argv[i], "--program-oom-score-adj=", 24) == 0 && parse_number(argv[i] + 24, 0, 1000, &oom_adj)) {
      oom_adj_given = true;
      continue;
    }
    usage(s, c);
  }
  if (argc - i < 3 || !parse_number(argv[i], 1, 65535, &rows) || !parse_number(argv[i + 1], 1, 65535, &cols) ||
      argv[i + 2][0] == '\0')
    usage(s, c);
  // The keep options mean nothing without --keep, and a kept session speaks version 3 at least.
  bool keep_options = session_id != 0 || retain != 2 << 20 || max_observers != 4;
  if ((keep && (session_id == 0 || version < 3)) || (!keep && keep_options)) usage(s, c);
  if ((landlock.on && !cwd_path) || (!landlock.on && (landlock.count > 0 || landlock.git || landlock.tmp || landlock.shm || landlock.home || landlock.binds))) usage(s, c);
  landlock.workspace = cwd_path;
  c->version = (unsigned)version;
  c->write_timeout_ms = (int)timeout;
  s->stop_timeout_ms = (int)stop_sec * 1000;
  s->program_oom_score_adj = oom_adj_given ? (int)oom_adj : -1;
  const struct frame_rule *rules = frame_rules(c->version);
  if (!rules) {
    char spoken[16];
    snprintf(spoken, sizeof spoken, "%lu", version);
    give_up(s, c, 2, "protocol version %s is not spoken by this helper", spoken);
  }
  decoder_init(&c->dec, rules);
  if (keep && !(s->keep = keep_new(retain, (unsigned)max_observers, session_id))) give_up(s, c, 1, "cannot allocate the ring of %s", "retained output");

  char why[512];
  int shm = -1;
  if (cwd_path) {
    int entered = cwd_reenter(cwd_path, cwd, why, sizeof why);
    if (entered < 0) give_up(s, c, 1, "%s", why);
    close(cwd);
    cwd = entered;
  }
  if (landlock.on) {
    if (landlock_check_git(&landlock, cwd, why, sizeof why) < 0) give_up(s, c, 1, "%s", why);
    if (mounts_check_workspace(&landlock, cwd, why, sizeof why) < 0) give_up(s, c, 1, "%s", why);
    if (mounts_check_namespace(&landlock, why, sizeof why) < 0) give_up(s, c, 1, "%s", why);
    if ((shm = mounts_open_shm(&landlock, why, sizeof why)) < 0) give_up(s, c, 1, "%s", why);
  }
  // The directory the client opened (entered again by --cwd-path, the same one): follow the fd.
  if (fchdir(cwd) < 0) give_up(s, c, 1, "cannot enter the working directory: %s", strerror(errno));
  // Its rule's parent is that descriptor: the tree the client opened (the same inode), never a path resolved now.
  if (landlock.on && (s->landlock = landlock_build(&landlock, cwd, shm, why, sizeof why)) < 0) give_up(s, c, 1, "%s", why);
  close(cwd);
  if (shm >= 0) close(shm);

  // Signals arrive through a signalfd; they are blocked from here on (the child unblocks them).
  sigset_t caught;
  sigemptyset(&caught);
  int list[] = {SIGCHLD, SIGTERM, SIGHUP, SIGINT, SIGQUIT};
  for (size_t k = 0; k < sizeof list / sizeof list[0]; k++) sigaddset(&caught, list[k]);
  // An inherited SIG_IGN for SIGCHLD would make the kernel reap the child unseen (no signal at all).
  signal(SIGCHLD, SIG_DFL);
  sigprocmask(SIG_BLOCK, &caught, NULL);
  signal(SIGPIPE, SIG_IGN); // every send uses MSG_NOSIGNAL; this covers anything else
  int sigfd = signalfd(-1, &caught, SFD_NONBLOCK | SFD_CLOEXEC);
  if (sigfd < 0) give_up(s, c, 1, "signalfd: %s", strerror(errno));

  // The program's environment when ENV gave one (NULL: the helper's own, as without --env-from-control).
  char **program_env = NULL;
  if (env_from_control) {
    const char *refused = control_read_env(&s->worker, &program_env);
    if (refused) give_up(s, c, 1, "the program's environment: %s", refused);
  }

  int slave = terminal_open(s, (unsigned)rows, (unsigned)cols);
  if (slave == -1) give_up(s, c, 1, "cannot open a terminal: %s", strerror(errno));
  if (slave < 0) give_up(s, c, 1, "cannot open the terminal's slave: %s", strerror(errno));
  // The program's OOM score under Landlock: its raiser is forked now, outside the domain (oom.c).
  if (s->landlock >= 0 && s->program_oom_score_adj >= 0 && (s->oom_raiser = oom_raiser_start(s->program_oom_score_adj, &s->oom_raiser_pid)) < 0)
    give_up(s, c, 1, "cannot start raising the program's OOM score: %s", strerror(errno));
  // Confined before the fork, so before any byte of the program's output: the program inherits the
  // domain (and enters a nested one of its own before execve, child.c). Unconfined until here, the
  // helper has parsed its arguments and root's control channel (ENV, or a warm unit's START) alone.
  if (s->landlock >= 0 && (landlock_add_terminal(s->landlock, slave) < 0 || landlock_enforce(s->landlock) < 0))
    give_up(s, c, 1, "cannot apply the workspace's Landlock confinement: %s", strerror(errno));
  if (child_start(s, slave, argv + i + 2, program_env) < 0) give_up(s, c, 1, "fork: %s", strerror(errno));
  close(slave);
  if (s->oom_raiser >= 0) close(s->oom_raiser); // the raiser exits once the program's process asked, or is gone
  // Without the PID at the worker, nothing may be written: the worker takes "no PID" to mean the
  // client's write side is still its own. A failed send marks the worker gone (check_done ends it).
  control_send_pid(&s->worker, s->child.pid);
  if (s->keep) keep_relay(s, c, sigfd);
  relay(s, c, sigfd);
}
