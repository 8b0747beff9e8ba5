// The session's terminal: its two ends opened, its size, and the master read into OUTPUT frames
// within the client's credit and written from the client's input ring.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "bytes.h"
#include "helper.h"

void set_winsize(struct session *s, int fd, unsigned rows, unsigned cols) {
  struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
  if (ioctl(fd, TIOCSWINSZ, &ws) < 0) say(&s->worker, 4, "TIOCSWINSZ: %s", strerror(errno));
}

// Both ends are opened here, before the fork (as forkpty does): a slave fd is open from before the
// child runs until the last holder closes it, so EIO from the master never means "not opened yet".
// Returns the slave; -1 when no terminal could be opened, -2 when its slave could not (errno says why).
int terminal_open(struct session *s, unsigned rows, unsigned cols) {
  char name[64];
  s->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (s->master < 0 || grantpt(s->master) < 0 || unlockpt(s->master) < 0 || ptsname_r(s->master, name, sizeof name) != 0)
    return -1;
  // O_NOCTTY: systemd made the helper a session leader; the terminal must not become its own.
  // TIOCGPTPEER (Linux 4.13) opens the slave through the master, never by its /dev/pts name, so it
  // works under the hardened profile's device policy, which denies opening any pts by name (that is
  // what keeps one session from opening another's terminal: the nodes all belong to one account).
  int slave = ioctl(s->master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (slave < 0 && (errno == EINVAL || errno == ENOTTY)) slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (slave < 0) return -2;
  set_winsize(s, s->master, rows, cols);
  fcntl(s->master, F_SETFL, fcntl(s->master, F_GETFL) | O_NONBLOCK);
  return slave;
}

bool terminal_readable(const struct session *s) {
  if (s->master_eof || s->master < 0) return false;
  struct pollfd p = {.fd = s->master, .events = POLLIN};
  return poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

// One OUTPUT frame from what the terminal has now, within the client's credit: 1 framed, 0 would
// block, -1 nobody holds the terminal any more (Linux reports that as EIO rather than EOF). A read
// of the master returns at most what the line discipline holds (a few KiB): reads go on into the
// same frame while more is there at once, so a flood costs the client one frame per 32 KiB, not per
// read, and a lone keystroke's echo waits for nothing (the next read says EAGAIN at once).
int terminal_read(struct session *s, struct client *c) {
  size_t want = c->send_credit < MAX_IO_PAYLOAD ? c->send_credit : MAX_IO_PAYLOAD, got = 0;
  while (got < want) {
    ssize_t n = read(s->master, c->out + HEADER_SIZE + got, want - got);
    if (n > 0) {
      got += (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) break;
    if (got == 0) { // EIO, reported with the next read if this one brought bytes
      s->master_eof = true;
      return -1;
    }
    break;
  }
  if (got == 0) return 0;
  c->out[0] = FRAME_OUTPUT;
  put_be32(c->out + 1, (uint32_t)got);
  c->out_len = HEADER_SIZE + got;
  c->out_off = 0;
  c->send_credit -= (uint32_t)got;
  return 1;
}

// INPUT waiting in the ring goes to the terminal as far as it takes it; what it took is granted back.
void terminal_write(struct session *s, struct client *c) {
  while (c->ring_len > 0) {
    size_t first = sizeof c->ring - c->ring_head < c->ring_len ? sizeof c->ring - c->ring_head : c->ring_len;
    ssize_t n = write(s->master, c->ring + c->ring_head, first);
    if (n > 0) {
      c->ring_head = (c->ring_head + (size_t)n) % sizeof c->ring;
      c->ring_len -= (size_t)n;
      consume_input(c, (size_t)n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return; // the program is not reading: its input waits here
    // Nobody can read the terminal any more: the input is dropped (still granted back).
    consume_input(c, c->ring_len);
    c->ring_len = 0;
    c->ring_head = 0;
    return;
  }
}
