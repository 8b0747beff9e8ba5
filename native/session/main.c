// Session helper: runs one program on its own terminal inside the session's unit, as the client's
// user, and speaks the data phase of the protocol with the client itself (privilege separation:
// root authenticates, the user's own process handles the user's bytes).
//
// Usage: opencode-pty-session [--env-from-control] [--protocol=N] [--write-timeout-ms=N] ROWS COLS PROGRAM [ARGS...]
//   --env-from-control: the program's environment is the control channel's first message (ENV), not
//   the helper's own (the worker always passes it, so the client's variables never apply to the helper)
//   fd 0: the session's working directory (an open directory fd)
//   fd 1: the client's connection; the helper writes to it only after the worker's GO
//   fd 2: the control channel to the worker (control.h); diagnostics travel there too
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "helper.h"

// The program's environment when ENV gave one (NULL: the helper's own, as without --env-from-control).
static char **program_env;

struct relay r = {.client = -1, .control = -1, .master = -1, .sigfd = -1, .stall_since = -1, .eof_next = -1};

// Decimal min..max, digits only: no sign, no spaces, nothing strtoul would quietly accept.
static bool parse_number(const char *s, unsigned long min, unsigned long max, unsigned long *value) {
  size_t len = strlen(s);
  if (len == 0 || len > 9 || strspn(s, "0123456789") != len) return false;
  unsigned long v = strtoul(s, NULL, 10);
  if (v < min || v > max) return false;
  *value = v;
  return true;
}

// The program must inherit nothing but its terminal; close_range(2) is one call where the kernel has it.
static void close_from(unsigned first) {
#ifdef SYS_close_range
  if (syscall(SYS_close_range, first, ~0U, 0) == 0) return;
#endif
  struct rlimit lim;
  long max = getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY ? (long)lim.rlim_cur : 65536;
  for (long fd = first; fd < max; fd++) close((int)fd);
}

void set_winsize(int fd, unsigned rows, unsigned cols) {
  struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
  if (ioctl(fd, TIOCSWINSZ, &ws) < 0) say(4, "TIOCSWINSZ: %s", strerror(errno));
}

// A failure before the data phase: reported as the end, then the helper exits.
static _Noreturn void give_up(int code, const char *fmt, const char *detail) {
  fail(END_INTERNAL, ERR_INTERNAL, fmt, detail);
  say(3, "%s", r.end_text);
  if (r.control >= 0) control_send_end();
  exit(code);
}

// Both ends are opened here, before the fork (as forkpty does): a slave fd is open from before the
// child runs until the last holder closes it, so EIO from the master never means "not opened yet".
static int open_pty(unsigned rows, unsigned cols) {
  char name[64];
  r.master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (r.master < 0 || grantpt(r.master) < 0 || unlockpt(r.master) < 0 || ptsname_r(r.master, name, sizeof name) != 0)
    give_up(1, "cannot open a terminal: %s", strerror(errno));
  // O_NOCTTY: systemd made the helper a session leader; the terminal must not become its own.
  // TIOCGPTPEER (Linux 4.13) opens the slave through the master, never by its /dev/pts name, so it
  // works under the hardened profile's device policy, which denies opening any pts by name (that is
  // what keeps one session from opening another's terminal: the nodes all belong to one account).
  int slave = ioctl(r.master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (slave < 0 && (errno == EINVAL || errno == ENOTTY)) slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (slave < 0) give_up(1, "cannot open the terminal's slave: %s", strerror(errno));
  set_winsize(r.master, rows, cols);
  fcntl(r.master, F_SETFL, fcntl(r.master, F_GETFL) | O_NONBLOCK);
  return slave;
}

static _Noreturn void run_child(int slave, char **argv) {
  // Ignored signals and the blocked mask survive exec: give the program the defaults, not the helper's.
  for (int sig = 1; sig < NSIG; sig++) signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  // A new session whose controlling terminal is this one, so ^C and hang-ups reach the program.
  if (setsid() < 0 || ioctl(slave, TIOCSCTTY, 0) < 0) _exit(126);
  for (int fd = 0; fd < 3; fd++)
    if (dup2(slave, fd) < 0) _exit(126);
  close_from(3);
  extern char **environ;
  if (program_env) environ = program_env; // execvp searches the program's PATH, not the helper's
  execvp(argv[0], argv);
  int err = errno;
  dprintf(2, TAG "%s: %s\n", argv[0], strerror(err)); // fd 2 is the terminal now: the user sees why
  _exit(err == ENOENT ? 127 : 126);                    // as a shell does
}

// SIGHUP to the program's process group, as a hang-up would; before the child's setsid() that
// group does not exist yet, and the signal waits blocked in the child until it resets its mask.
void hangup_child(void) {
  if (r.child_done || r.child <= 0) return;
  if (kill(-r.child, SIGHUP) < 0 && errno == ESRCH) kill(r.child, SIGHUP);
}

void reap(bool block) {
  if (r.child_done) return;
  for (;;) {
    int status;
    pid_t p = waitpid(r.child, &status, block ? 0 : WNOHANG);
    if (p < 0 && errno == EINTR) continue;
    if (p == r.child) {
      r.status = status;
      r.child_done = true;
    } else if (p < 0) { // cannot happen for our own child; do not wait forever for it
      say(3, "waitpid: %s", strerror(errno));
      r.status = 1 << 8;
      r.child_done = true;
    }
    return;
  }
}

// Exit as the program did, so systemd records the same ExecMainCode/ExecMainStatus for the unit.
_Noreturn void exit_like(int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core); // the program may have dumped core; the helper must not
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    raise(sig);
    exit(128 + sig); // only for a signal whose default action does not terminate
  }
  exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

// fds 0-2 as systemd gave them move above 2 (close-on-exec) before anything is opened, and 0-2
// become /dev/null, so no later open() can land on a standard fd by accident.
static int take_fds(void) {
  close_from(3);
  int cwd = fcntl(0, F_DUPFD_CLOEXEC, 3);
  r.client = fcntl(1, F_DUPFD_CLOEXEC, 3);
  r.control = fcntl(2, F_DUPFD_CLOEXEC, 3);
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (cwd < 0 || r.client < 0 || r.control < 0 || null < 0) return -1;
  for (int fd = 0; fd < 3; fd++)
    if (dup2(null, fd) < 0) return -1;
  if (null > 2) close(null);
  return cwd;
}

static void usage(void) {
  give_up(2, "%s",
          "usage: opencode-pty-session [--env-from-control] [--protocol=N] [--write-timeout-ms=N] ROWS COLS PROGRAM [ARGS...]; "
          "ROWS and COLS are decimal 1..65535; fd 0 is the working directory, fd 1 the client, fd 2 the worker");
}

int main(int argc, char **argv) {
  // Before anything else: no process of the same user may ptrace us or take our fds (pidfd_getfd;
  // there is no Yama on the hosts we run on). Installed root-owned 0711, the kernel has made us
  // non-dumpable at exec already (the user cannot read the file); readable, there is a window
  // between exec and this call in which our stdio (the client socket) can be taken, so the broker
  // refuses to run with a helper that is not root-owned 0711. The program we exec is dumpable again.
  if (prctl(PR_SET_DUMPABLE, 0) != 0) return 1;
  int cwd = take_fds();
  if (cwd < 0) {
    // Nothing is known to be safe to write to; exit as a failed start does.
    return 1;
  }
  unsigned long version = 1, timeout = 10000, rows, cols;
  bool env_from_control = false;
  int i = 1;
  for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
    if (strcmp(argv[i], "--env-from-control") == 0) {
      env_from_control = true;
      continue;
    }
    if (strncmp(argv[i], "--protocol=", 11) == 0 && parse_number(argv[i] + 11, 1, 65535, &version)) continue;
    if (strncmp(argv[i], "--write-timeout-ms=", 19) == 0 && parse_number(argv[i] + 19, 1, 3600000, &timeout)) continue;
    usage();
  }
  if (argc - i < 3 || !parse_number(argv[i], 1, 65535, &rows) || !parse_number(argv[i + 1], 1, 65535, &cols) ||
      argv[i + 2][0] == '\0')
    usage();
  r.version = (unsigned)version;
  r.write_timeout_ms = (int)timeout;
  r.dec.rules = frame_rules(r.version);
  if (!r.dec.rules) {
    char spoken[16];
    snprintf(spoken, sizeof spoken, "%lu", version);
    give_up(2, "protocol version %s is not spoken by this helper", spoken);
  }

  // The directory the client opened, not a path resolved now: follow the fd.
  if (fchdir(cwd) < 0) give_up(1, "cannot enter the working directory: %s", strerror(errno));
  close(cwd);

  // Signals arrive through a signalfd; they are blocked from here on (the child unblocks them).
  sigset_t caught;
  sigemptyset(&caught);
  int list[] = {SIGCHLD, SIGTERM, SIGHUP, SIGINT, SIGQUIT};
  for (size_t k = 0; k < sizeof list / sizeof list[0]; k++) sigaddset(&caught, list[k]);
  // An inherited SIG_IGN for SIGCHLD would make the kernel reap the child unseen (no signal at all).
  signal(SIGCHLD, SIG_DFL);
  sigprocmask(SIG_BLOCK, &caught, NULL);
  signal(SIGPIPE, SIG_IGN); // every send uses MSG_NOSIGNAL; this covers anything else
  r.sigfd = signalfd(-1, &caught, SFD_NONBLOCK | SFD_CLOEXEC);
  if (r.sigfd < 0) give_up(1, "signalfd: %s", strerror(errno));

  if (env_from_control) {
    const char *refused = control_read_env(&program_env);
    if (refused) give_up(1, "the program's environment: %s", refused);
  }

  int slave = open_pty((unsigned)rows, (unsigned)cols);
  r.child = fork();
  if (r.child < 0) give_up(1, "fork: %s", strerror(errno));
  if (r.child == 0) run_child(slave, argv + i + 2);
  close(slave);
  // Without the PID at the worker, nothing may be written: the worker takes "no PID" to mean the
  // client's write side is still its own.
  if (control_send_pid(r.child) < 0) worker_gone();
  relay();
}
