// END_INPUT (protocol version 2): the client's input has ended, and the program should see end of file.
// A terminal has no end of file of its own: in canonical mode a read returns 0 when it meets the VEOF
// character at the start of a line (termios(3)), and that character is consumed by the one read. So,
// as util-linux script(1) does, VEOF goes in only once the program has read everything before it
// (the slave has nothing readable, poll(2) POLLIN), and again each time it has read that one too:
// a line left unfinished is ended by the first, and every later read sees end of file, as with a pipe.
// Written earlier, a VEOF would be turned into a NUL byte when the program leaves canonical mode
// before reading it (n_tty_set_termios), which is what a line editor (readline) does at its prompt.
//
// Nothing tells the master side that the program has read its input, so the queue is looked at again
// after 10 ms, doubling to 1 s.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "helper.h"

enum { EOF_FIRST_DELAY_MS = 10, EOF_MAX_DELAY_MS = 1000 };

void end_input(struct session *s) {
  s->eof.next = now_ms();
  s->eof.delay = EOF_FIRST_DELAY_MS;
}

// The terminal's mode and whether the program has input it has not read. A slave of our own, opened
// through the master for the look and closed at once: a slave the helper kept open would hide the
// program's last close (the master's EIO) from the relay. false: the terminal cannot be looked at.
static bool look(const struct session *s, struct termios *mode, bool *unread) {
  int slave = ioctl(s->master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
  if (slave < 0) return false;
  struct pollfd p = {.fd = slave, .events = POLLIN};
  bool ok = tcgetattr(slave, mode) == 0 && poll(&p, 1, 0) >= 0;
  *unread = (p.revents & POLLIN) != 0;
  close(slave);
  return ok;
}

// Called on every turn of the relay; writes VEOF when it is due and the program has read everything.
void feed_eof(struct session *s, const struct client *c) {
  if (s->eof.next < 0) return;
  if (s->stopping || s->child.done || s->master_eof) {
    s->eof.next = -1;
    return;
  }
  if (c->ring_len > 0 || now_ms() < s->eof.next) return;
  struct termios mode;
  bool unread;
  if (!look(s, &mode, &unread)) {
    say(&s->worker, 4, "cannot look at the terminal for END_INPUT: %s", strerror(errno));
    s->eof.next = -1;
    return;
  }
  // Canonical mode: VEOF is end of file. A line editor (readline, libedit) reads its keys in
  // non-canonical mode with signals on and takes VEOF on an empty line as end of input, as when a user
  // presses ^D. A full-screen program in raw mode (ISIG off too) has no end of file: nothing is written.
  cc_t eof = mode.c_cc[VEOF];
  bool wanted = (mode.c_lflag & ICANON) || (mode.c_lflag & ISIG);
  if (!unread && wanted && eof != _POSIX_VDISABLE) {
    ssize_t n;
    do n = write(s->master, &eof, 1);
    while (n < 0 && errno == EINTR);
    (void)n; // a full input queue (EAGAIN): the next look tries again
  }
  // Growing either way: a program that reads on after end of file (a line editor holding an unfinished
  // line takes ^D as "delete") is sent one VEOF a second at most.
  s->eof.next = now_ms() + s->eof.delay;
  s->eof.delay = s->eof.delay * 2 > EOF_MAX_DELAY_MS ? EOF_MAX_DELAY_MS : s->eof.delay * 2;
}
