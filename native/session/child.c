// The program's lifecycle: forked onto the terminal's slave, reaped, hung up, and, when the session
// ends while it still runs, ended in steps as the worker's stop ends it (src/worker/unit-stop.ts,
// docs/architecture.md "Who ends a session"): the hang-up at once, SIGTERM (and SIGHUP again) to the
// unit's processes after stop_timeout_ms, SIGKILL after twice that. A program that ignores the hang-up
// and SIGTERM then cannot keep its unit alive after its worker is gone.
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
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helper.h"
#include "landlock.h"

int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

// poll(2) timeouts in ms, -1 for none: the sooner of two, and the time until a now_ms deadline (-1 none),
// rounded up so a wake-up never comes before it.
int timeout_earlier(int a, int b) {
  return a < 0 ? b : b < 0 ? a : a < b ? a : b;
}

int timeout_until(int64_t deadline) {
  if (deadline < 0) return -1;
  int64_t left = deadline - now_ms();
  return left < 0 ? 0 : (int)left + 1;
}

// The signalfd's signals, for both relays (relay.c, keep-relay.c).
void child_signals(struct session *s, int sigfd) {
  struct signalfd_siginfo si;
  ssize_t n;
  while ((n = read(sigfd, &si, sizeof si)) == (ssize_t)sizeof si || (n < 0 && errno == EINTR)) {
    if (n < 0) continue;
    if (si.ssi_signo == SIGCHLD) child_reap(s);
    // A hang-up is passed on to the program's process group, as a closing terminal would.
    else if (si.ssi_signo == SIGHUP) child_hang_up(s);
    // SIGTERM, SIGINT, SIGQUIT: caught only so they do not end the helper, which lives on to drain
    // the program's last output and report. A stop signals every process of the unit itself.
  }
}

// The program must inherit nothing but its terminal; close_range(2) is one call where the kernel has it.
void close_from(unsigned first) {
#ifdef SYS_close_range
  if (syscall(SYS_close_range, first, ~0U, 0) == 0) return;
#endif
  struct rlimit lim;
  long max = getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY ? (long)lim.rlim_cur : 65536;
  for (long fd = first; fd < max; fd++) close((int)fd);
}

// Under a memory budget the kernel's OOM killer must take the program, never the helper that reports the
// end: the program alone gets a higher score. Raising one's own needs no privilege; lowering would
// (proc(5) oom_score_adj), and systemd's OOMScoreAdjust= would raise the helper's too. A non-dumpable
// process's /proc/self files are root's, so the child becomes dumpable first: only once it holds nothing
// but the terminal (fds 0-2), as the program it becomes in a moment is anyway.
static void raise_oom_score(int adj) {
  if (adj < 0) return;
  if (prctl(PR_SET_DUMPABLE, 1) < 0) _exit(126);
  int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
  if (fd < 0 || dprintf(fd, "%d\n", adj) < 0) _exit(126);
  close(fd);
}

// Under the workspace profile the child is inside the helper's Landlock domain, where /proc is read-only:
// the raiser outside it writes the score (oom.c), asked over `raiser` once fds 0-2 are the terminal.
static _Noreturn void run_child(int slave, int landlock, char **argv, char **env, int oom_score_adj, int raiser) {
  // Ignored signals and the blocked mask survive exec: give the program the defaults, not the helper's.
  for (int sig = 1; sig < NSIG; sig++) signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  // A new session whose controlling terminal is this one, so ^C and hang-ups reach the program.
  if (setsid() < 0 || ioctl(slave, TIOCSCTTY, 0) < 0) _exit(126);
  for (int fd = 0; fd < 3; fd++)
    if (dup2(slave, fd) < 0) _exit(126);
  // A domain of its own inside the helper's: the program may not signal its helper (Landlock's signal
  // scope). The helper is confined already, so a failure here still leaves the program confined.
  if (landlock >= 0 && landlock_enforce(landlock) < 0) {
    dprintf(2, TAG "cannot apply the workspace's Landlock confinement: %s\n", strerror(errno));
    _exit(126);
  }
  if (raiser >= 0) {
    if (dup2(raiser, 3) < 0) _exit(126);
    close_from(4);
    oom_raise_by(3);
  } else {
    close_from(3);
    raise_oom_score(oom_score_adj);
  }
  extern char **environ;
  if (env) environ = env; // execvp searches the program's PATH, not the helper's
  execvp(argv[0], argv);
  int err = errno;
  dprintf(2, TAG "%s: %s\n", argv[0], strerror(err)); // fd 2 is the terminal now: the user sees why
  _exit(err == ENOENT ? 127 : 126);                    // as a shell does
}

// The child's pid, or -1 (errno set). `env` NULL: the helper's own environment.
pid_t child_start(struct session *s, int slave, char **argv, char **env) {
  pid_t pid = fork();
  if (pid == 0) run_child(slave, s->landlock, argv, env, s->program_oom_score_adj, s->oom_raiser);
  if (pid > 0) s->child.pid = pid;
  return pid;
}

void child_reap(struct session *s) {
  // The OOM score's raiser (oom.c), once it has exited: never a zombie for the session's life.
  if (s->oom_raiser_pid > 0 && waitpid(s->oom_raiser_pid, NULL, WNOHANG) == s->oom_raiser_pid) s->oom_raiser_pid = 0;
  struct child *child = &s->child;
  if (child->done || child->pid <= 0) return;
  for (;;) {
    int status;
    pid_t p = waitpid(child->pid, &status, WNOHANG);
    if (p < 0 && errno == EINTR) continue;
    if (p == child->pid) {
      child->status = status;
      child->done = true;
    } else if (p < 0) { // cannot happen for our own child; do not wait forever for it
      say(&s->worker, 3, "waitpid: %s", strerror(errno));
      child->status = 1 << 8;
      child->done = true;
    }
    return;
  }
}

// SIGHUP to the program's process group, as a hang-up would; before the child's setsid() that
// group does not exist yet, and the signal waits blocked in the child until it resets its mask.
static void signal_program(const struct child *child, int sig) {
  if (child->done || child->pid <= 0) return;
  if (kill(-child->pid, sig) < 0 && errno == ESRCH) kill(child->pid, sig);
}

void child_hang_up(struct session *s) {
  signal_program(&s->child, SIGHUP);
}

// The session is over and the program still runs: the terminal goes (the kernel hangs up its session,
// as a closing terminal does), with SIGHUP to the program's group, and the next step is timed.
void child_stop_begin(struct session *s) {
  if (s->child.step != STEP_NONE) return;
  if (s->master >= 0) close(s->master);
  s->master = -1;
  s->master_eof = true;
  child_hang_up(s);
  s->child.step = STEP_HUNG_UP;
  s->child.next_step = now_ms() + s->stop_timeout_ms;
}

// The next step once it is due: SIGTERM, then SIGKILL, to the program and every other process of the
// unit (cgroup.c). SIGTERM goes before the repeated hang-up, as the worker's stop sends them: readline
// keeps one pending signal, and an interactive shell that ignores SIGTERM must see the SIGHUP last.
void child_stop_step(struct session *s) {
  if (s->child.step == STEP_NONE || s->child.next_step < 0 || now_ms() < s->child.next_step) return;
  if (s->child.step == STEP_HUNG_UP) {
    signal_program(&s->child, SIGTERM);
    signal_unit_others(s, SIGTERM);
    signal_program(&s->child, SIGHUP);
    signal_unit_others(s, SIGHUP);
    s->child.step = STEP_TERMINATED;
    s->child.next_step = now_ms() + s->stop_timeout_ms;
    return;
  }
  if (s->child.step == STEP_TERMINATED) {
    signal_program(&s->child, SIGKILL);
    if (s->child.pid > 0 && !s->child.done) kill(s->child.pid, SIGKILL);
    signal_unit_others(s, SIGKILL);
    s->child.step = STEP_KILLED;
    s->child.next_step = -1; // SIGCHLD ends the wait
  }
}

// ms until the next step (-1: none), for poll's timeout.
int child_stop_timeout(const struct session *s) {
  if (s->child.next_step < 0) return -1;
  int64_t left = s->child.next_step - now_ms();
  return left < 0 ? 0 : (int)left + 1;
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
