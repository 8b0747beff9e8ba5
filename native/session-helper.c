// Session helper: runs one program on its own terminal inside the session's unit and relays it over fd 1.
//
// Usage: opencode-pty-session ROWS COLS PROGRAM [ARGS...]
//   fd 0: the session's working directory (an open directory fd), fd 1: one end of a stream socket
//   whose other end the worker holds, fd 2: diagnostics only (the journal).
// Frames on fd 1, both ways: 1 byte type, 4 bytes payload length (unsigned, big-endian), payload.
// It runs as the client's user, so the terminal it opens belongs to the client; root never holds it.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#define TAG "opencode-pty-session: "
#define WORKER_FD 1

enum {
  FRAME_INPUT = 0x05,  // worker -> helper: bytes for the terminal, 1..MAX_IO
  FRAME_OUTPUT = 0x06, // helper -> worker: bytes from the terminal, 1..MAX_IO
  FRAME_RESIZE = 0x07, // worker -> helper: rows u16 BE, cols u16 BE, each 1..65535
  HEADER_SIZE = 5,
  RESIZE_SIZE = 4,
  MAX_IO = 32768,
};

enum parse_state { WANT_HEADER, WANT_INPUT, WANT_RESIZE };

// The whole relay: one child, one master, two fixed buffers. Nothing here grows.
static struct {
  int master, sigfd;
  pid_t child;
  int status;       // wait status of the child, valid once child_done
  bool child_done;
  bool master_hup;  // poll saw POLLHUP: every slave fd may be closed, read until EIO
  bool master_eof;  // read gave EIO: nobody holds the terminal any more
  // Toward the worker: at most one OUTPUT frame, header included.
  unsigned char out[HEADER_SIZE + MAX_IO];
  size_t out_len, out_off;
  // From the worker: raw bytes, parsed in place; INPUT payloads go to the master straight from here.
  unsigned char rx[HEADER_SIZE + MAX_IO];
  size_t rx_len, rx_off;
  enum parse_state state;
  unsigned char small[HEADER_SIZE]; // a header or a RESIZE payload split across reads
  size_t got;
  uint32_t remaining; // INPUT payload bytes still to come
} r;

static void say(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs(TAG, stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static uint32_t get_be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

// Decimal 1..65535, digits only: no sign, no spaces, nothing strtoul would quietly accept.
static bool parse_dim(const char *s, unsigned *value) {
  size_t len = strlen(s);
  if (len == 0 || len > 5 || strspn(s, "0123456789") != len) return false;
  unsigned long v = strtoul(s, NULL, 10);
  if (v < 1 || v > 65535) return false;
  *value = (unsigned)v;
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

static void set_winsize(int fd, unsigned rows, unsigned cols) {
  struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
  if (ioctl(fd, TIOCSWINSZ, &ws) < 0) say("TIOCSWINSZ: %s", strerror(errno));
}

// Both ends are opened here, before the fork (as forkpty does): a slave fd is open from before the
// child runs until the last holder closes it, so EIO from the master never means "not opened yet".
static void open_pty(unsigned rows, unsigned cols, int *slave) {
  char name[64];
  r.master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (r.master < 0 || grantpt(r.master) < 0 || unlockpt(r.master) < 0 ||
      ptsname_r(r.master, name, sizeof name) != 0) {
    say("cannot open a terminal: %s", strerror(errno));
    exit(1);
  }
  // O_NOCTTY: systemd made the helper a session leader; the terminal must not become its own.
  *slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (*slave < 0) {
    say("%s: %s", name, strerror(errno));
    exit(1);
  }
  set_winsize(r.master, rows, cols);
  fcntl(r.master, F_SETFL, fcntl(r.master, F_GETFL) | O_NONBLOCK);
}

static _Noreturn void run_child(int slave, char **argv) {
  // Ignored signals and the blocked mask survive exec: give the program the defaults, not the helper's.
  for (int sig = 1; sig < NSIG; sig++) signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  // A new session whose controlling terminal is this one, so ^C and hang-ups reach the program.
  if (setsid() < 0 || ioctl(slave, TIOCSCTTY, 0) < 0) {
    say("cannot take the terminal: %s", strerror(errno));
    _exit(126);
  }
  for (int fd = 0; fd < 3; fd++)
    if (dup2(slave, fd) < 0) _exit(126);
  close_from(3);
  execvp(argv[0], argv);
  int err = errno;
  say("%s: %s", argv[0], strerror(err)); // fd 2 is the terminal now: the user sees why
  _exit(err == ENOENT ? 127 : 126);      // as a shell does
}

// SIGHUP to the program's process group, as a hang-up would; before the child's setsid() that
// group does not exist yet, and the signal waits blocked in the child until it resets its mask.
static void hangup_child(void) {
  if (r.child_done) return;
  if (kill(-r.child, SIGHUP) < 0 && errno == ESRCH) kill(r.child, SIGHUP);
}

static void reap(bool block) {
  if (r.child_done) return;
  for (;;) {
    int status;
    pid_t p = waitpid(r.child, &status, block ? 0 : WNOHANG);
    if (p < 0 && errno == EINTR) continue;
    if (p == r.child) {
      r.status = status;
      r.child_done = true;
    } else if (p < 0) { // cannot happen for our own child; do not wait forever for it
      say("waitpid: %s", strerror(errno));
      r.status = 1 << 8;
      r.child_done = true;
    }
    return;
  }
}

static void handle_signals(void) {
  struct signalfd_siginfo si;
  ssize_t n;
  while ((n = read(r.sigfd, &si, sizeof si)) == (ssize_t)sizeof si || (n < 0 && errno == EINTR)) {
    if (n < 0) continue;
    if (si.ssi_signo == SIGCHLD) reap(false);
    // A hang-up is passed on to the program's process group, as a closing terminal would.
    else if (si.ssi_signo == SIGHUP) hangup_child();
    // SIGTERM, SIGINT, SIGQUIT: caught only so they do not end the helper, which lives on to drain the
    // program's last output. systemd signals every process of the unit itself (KillMode=control-group,
    // SendSIGHUP=yes), so a client's SIGNAL reaches the program unchanged through KillUnit.
  }
}

// Exit as the program did, so systemd records the same ExecMainCode/ExecMainStatus for the unit.
static _Noreturn void exit_like(int status) {
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

// One OUTPUT frame from what the master has now: 1 framed, 0 would block, -1 EIO/EOF (no slave left).
static int read_master(void) {
  for (;;) {
    ssize_t n = read(r.master, r.out + HEADER_SIZE, MAX_IO);
    if (n > 0) {
      r.out[0] = FRAME_OUTPUT;
      r.out[1] = 0, r.out[2] = 0, r.out[3] = (unsigned char)(n >> 8), r.out[4] = (unsigned char)n;
      r.out_len = HEADER_SIZE + (size_t)n;
      r.out_off = 0;
      return 1;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return 0;
    r.master_eof = true; // Linux reports "every slave closed" as EIO rather than EOF
    return -1;
  }
}

// Write what is pending toward the worker; 0 when done or it would block, -1 when the worker is gone.
static int write_worker(void) {
  while (r.out_off < r.out_len) {
    ssize_t n = write(WORKER_FD, r.out + r.out_off, r.out_len - r.out_off);
    if (n > 0) r.out_off += (size_t)n;
    else if (n < 0 && errno == EINTR) continue;
    else if (n < 0 && errno == EAGAIN) return 0;
    else return -1;
  }
  r.out_len = r.out_off = 0;
  return 0;
}

// Consume the worker's bytes in rx. Headers and RESIZE payloads may be split anywhere, so they are
// collected in `small`; lengths are checked the moment the header is complete. -1 on a bad frame.
static int process_input(void) {
  while (r.rx_off < r.rx_len) {
    size_t avail = r.rx_len - r.rx_off;
    if (r.state == WANT_INPUT) {
      size_t len = avail < r.remaining ? avail : r.remaining;
      ssize_t n = r.master_eof ? (ssize_t)len : write(r.master, r.rx + r.rx_off, len);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return 0; // the program is not reading: read no more from the worker
      if (n < 0) n = (ssize_t)len;            // nobody can read the terminal any more: drop the bytes
      r.rx_off += (size_t)n;
      r.remaining -= (uint32_t)n;
      if (r.remaining == 0) r.state = WANT_HEADER;
      continue;
    }
    size_t want = (r.state == WANT_HEADER ? HEADER_SIZE : RESIZE_SIZE) - r.got;
    size_t take = avail < want ? avail : want;
    memcpy(r.small + r.got, r.rx + r.rx_off, take);
    r.rx_off += take;
    r.got += take;
    if (take < want) break;
    r.got = 0;
    if (r.state == WANT_HEADER) {
      uint32_t len = get_be32(r.small + 1);
      if (r.small[0] == FRAME_INPUT && len >= 1 && len <= MAX_IO) {
        r.state = WANT_INPUT;
        r.remaining = len;
      } else if (r.small[0] == FRAME_RESIZE && len == RESIZE_SIZE) {
        r.state = WANT_RESIZE;
      } else {
        say("bad frame from the worker: type 0x%02x, length %u", r.small[0], (unsigned)len);
        return -1;
      }
    } else {
      unsigned rows = (unsigned)r.small[0] << 8 | r.small[1], cols = (unsigned)r.small[2] << 8 | r.small[3];
      if (rows == 0 || cols == 0) {
        say("bad RESIZE from the worker: %u x %u", rows, cols);
        return -1;
      }
      set_winsize(r.master, rows, cols); // the kernel sends SIGWINCH to the foreground group
      r.state = WANT_HEADER;
    }
  }
  if (r.rx_off == r.rx_len) r.rx_off = r.rx_len = 0;
  return 0;
}

// Read the worker only when rx is empty. 0 on success or would-block, -1 at EOF or an error.
static int read_worker(void) {
  for (;;) {
    ssize_t n = read(WORKER_FD, r.rx, sizeof r.rx);
    if (n > 0) {
      r.rx_len = (size_t)n;
      r.rx_off = 0;
      return process_input();
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return 0;
    return -1;
  }
}

// The worker is gone: nobody will read the terminal. Closing the master hangs it up (SIGHUP to the
// foreground group); the session leader's group is told too. Then end as the program ends.
static _Noreturn void worker_gone(void) {
  close(r.master);
  hangup_child();
  reap(true);
  exit_like(r.status);
}

// The program has ended: deliver what the terminal still holds (others in the session may keep the
// slave open, so stop at EIO or at "nothing more right now"), then EOF means "all output delivered".
static _Noreturn void drain_and_exit(void) {
  for (;;) {
    for (;;) { // blocking is fine now: there is nothing else left to serve
      if (write_worker() < 0) exit_like(r.status);
      if (r.out_len == 0) break;
      struct pollfd p = {.fd = WORKER_FD, .events = POLLOUT};
      if (poll(&p, 1, -1) < 0 && errno != EINTR) exit_like(r.status);
    }
    if (r.master_eof || read_master() <= 0) break;
  }
  shutdown(WORKER_FD, SHUT_WR);
  exit_like(r.status);
}

static _Noreturn void relay(void) {
  for (;;) {
    bool out_pending = r.out_off < r.out_len, in_pending = r.rx_off < r.rx_len;
    // Backpressure as systemd's ptyfwd does it: read the master only when the worker has taken
    // everything, read the worker only when the program has taken everything.
    short master_events = 0;
    if (!r.master_eof && !(r.master_hup && out_pending))
      master_events = (short)((out_pending ? 0 : POLLIN) | (in_pending ? POLLOUT : 0));
    struct pollfd p[3] = {
      {.fd = r.sigfd, .events = POLLIN},
      {.fd = WORKER_FD, .events = (short)((in_pending ? 0 : POLLIN) | (out_pending ? POLLOUT : 0))},
      {.fd = master_events ? r.master : -1, .events = master_events},
    };
    if (poll(p, 3, -1) < 0) {
      if (errno == EINTR) continue;
      say("poll: %s", strerror(errno));
      worker_gone();
    }
    if (p[0].revents) handle_signals();
    if (r.child_done) drain_and_exit();
    if (p[1].revents & (POLLHUP | POLLERR)) worker_gone();
    if ((p[1].revents & POLLIN) && read_worker() < 0) worker_gone();
    if (p[2].revents & POLLHUP) r.master_hup = true;
    if ((p[2].revents & POLLOUT) && process_input() < 0) worker_gone();
    if ((p[2].revents & (POLLIN | POLLHUP | POLLERR)) && r.out_len == 0) read_master();
    // Nobody holds the terminal any more: input still pending is dropped, so the worker is read again.
    if (r.master_eof && r.rx_off < r.rx_len && process_input() < 0) worker_gone();
    if (write_worker() < 0) worker_gone();
  }
}

int main(int argc, char **argv) {
  unsigned rows, cols;
  if (argc < 4 || !parse_dim(argv[1], &rows) || !parse_dim(argv[2], &cols) || argv[3][0] == '\0') {
    fputs("usage: opencode-pty-session ROWS COLS PROGRAM [ARGS...]\n"
          "  ROWS and COLS are decimal 1..65535; fd 0 is the working directory, fd 1 the worker's socket\n",
          stderr);
    return 2;
  }
  // The directory the client opened, not a path resolved now: follow the fd.
  if (fchdir(0) < 0) {
    say("cannot enter the working directory (fd 0): %s", strerror(errno));
    return 1;
  }
  int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null < 0 || dup2(null, 0) < 0) {
    say("/dev/null: %s", strerror(errno));
    return 1;
  }
  close_from(3);

  // Signals arrive through a signalfd; they are blocked from here on (the child unblocks them).
  sigset_t caught;
  sigemptyset(&caught);
  int list[] = {SIGCHLD, SIGTERM, SIGHUP, SIGINT, SIGQUIT};
  for (size_t i = 0; i < sizeof list / sizeof list[0]; i++) sigaddset(&caught, list[i]);
  // An inherited SIG_IGN for SIGCHLD would make the kernel reap the child unseen (no signal at all).
  signal(SIGCHLD, SIG_DFL);
  sigprocmask(SIG_BLOCK, &caught, NULL);
  signal(SIGPIPE, SIG_IGN); // a vanished worker shows up as EPIPE, handled where it happens
  r.sigfd = signalfd(-1, &caught, SFD_NONBLOCK | SFD_CLOEXEC);
  if (r.sigfd < 0) {
    say("signalfd: %s", strerror(errno));
    return 1;
  }
  fcntl(WORKER_FD, F_SETFL, fcntl(WORKER_FD, F_GETFL) | O_NONBLOCK);

  int slave;
  open_pty(rows, cols, &slave);
  r.child = fork();
  if (r.child < 0) {
    say("fork: %s", strerror(errno));
    return 1;
  }
  if (r.child == 0) run_child(slave, argv + 3);
  close(slave);
  relay();
}
