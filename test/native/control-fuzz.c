// A fuzz run of the kept session's control channel as the helper reads it (control.c control_read,
// keep-attach.c): generated worker messages (ATTACH with plausible and broken fields, QUERY,
// TERMINATE, GO again, junk), split at random points, with 0..3 descriptors riding on random bytes.
// The properties: no memory error or leak (AddressSanitizer, LeakSanitizer), no undefined behaviour
// (UBSan), and no descriptor leaked: after the connections are let go, this process holds exactly the
// descriptors it held before, whatever came (every passed fd is either a connection's or closed).
// argv[1]: runs (default 20000), argv[2]: a time budget in seconds (default 3).
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../../native/session/bytes.h"
#include "../../native/session/keep.h"

static uint64_t state = 0x2545f4914f6cdd1du;

static uint64_t next(void) { // xorshift64*: the same inputs every run
  state ^= state >> 12, state ^= state << 25, state ^= state >> 27;
  return state * 2685821657736338717u;
}

static size_t below(size_t n) {
  return n ? (size_t)(next() % n) : 0;
}

static int open_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  int n = 0;
  for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

// One message the worker could send, or nearly.
static size_t message(unsigned char *out) {
  size_t kind = below(40);
  if (kind < 24) { // ATTACH
    out[0] = CONTROL_ATTACH;
    uint32_t len = below(40) == 0 ? (uint32_t)below(20) : ATTACH_SIZE;
    put_be32(out + 1, len);
    unsigned char *p = out + CONTROL_HEADER_SIZE;
    p[0] = (unsigned char)(below(40) == 0 ? next() : below(40));
    p[1] = (unsigned char)(below(40) == 0 ? next() : 1 + below(2));
    uint64_t offsets[] = {0, 1, 4096, UINT64_MAX, UINT64_MAX - 1, (uint64_t)1 << 63, next()};
    put_be64(p + 2, offsets[below(sizeof offsets / sizeof offsets[0])]);
    put_be16(p + 10, (uint32_t)(below(40) == 0 ? 0 : 1 + below(65535)));
    put_be16(p + 12, (uint32_t)(below(40) == 0 ? 0 : 1 + below(65535)));
    return CONTROL_HEADER_SIZE + (len <= ATTACH_SIZE ? len : ATTACH_SIZE);
  }
  if (kind < 37) { // QUERY, mostly well formed
    out[0] = CONTROL_QUERY;
    put_be32(out + 1, below(40) == 0 ? (uint32_t)next() : 0);
    return CONTROL_HEADER_SIZE;
  }
  if (kind < 39) { // TERMINATE or a GO after GO (the session's end, or a channel fault)
    out[0] = below(2) ? CONTROL_TERMINATE : CONTROL_GO;
    put_be32(out + 1, 0);
    return CONTROL_HEADER_SIZE;
  }
  size_t len = 1 + below(24); // junk
  for (size_t i = 0; i < len; i++) out[i] = (unsigned char)next();
  return len;
}

// Sends `len` bytes with `fds` fresh descriptors (one end of a socketpair each, ours closed once sent).
static void send_with(int fd, const unsigned char *data, size_t len, int fds) {
  union {
    struct cmsghdr align;
    char space[CMSG_SPACE(3 * sizeof(int))];
  } control;
  int pairs[3][2], theirs[3];
  for (int i = 0; i < fds; i++) {
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pairs[i]) < 0) abort();
    theirs[i] = pairs[i][1];
  }
  struct iovec iov = {.iov_base = (void *)data, .iov_len = len};
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
  if (fds > 0) {
    msg.msg_control = control.space;
    msg.msg_controllen = CMSG_SPACE((size_t)fds * sizeof(int));
    struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET, cm->cmsg_type = SCM_RIGHTS, cm->cmsg_len = CMSG_LEN((size_t)fds * sizeof(int));
    memcpy(CMSG_DATA(cm), theirs, (size_t)fds * sizeof(int));
  }
  if (sendmsg(fd, &msg, MSG_NOSIGNAL) != (ssize_t)len) abort();
  for (int i = 0; i < fds; i++) close(pairs[i][0]), close(pairs[i][1]);
}

// What the runs reached, so the test can tell the fuzz is not vacuous.
static long attached, refused, faults;

// Reads what the helper sent, counting refused ATTACHes (DETACHED with reason 8) as messages stream past.
static void drain(int fd) {
  static unsigned char sink[1 << 16];
  static unsigned char header[CONTROL_HEADER_SIZE];
  static size_t got, at;
  static uint32_t left;
  ssize_t n;
  while ((n = recv(fd, sink, sizeof sink, MSG_DONTWAIT)) > 0) {
    for (ssize_t i = 0; i < n; i++) {
      if (got < CONTROL_HEADER_SIZE) {
        header[got++] = sink[i];
        if (got == CONTROL_HEADER_SIZE && (left = get_be32(header + 1)) == 0) got = 0;
        at = 0;
        continue;
      }
      if (header[0] == CONTROL_DETACHED && at == 1) refused += sink[i] == DETACH_REFUSED;
      at++;
      if (--left == 0) got = 0;
    }
  }
}

static void one_session(void) {
  struct session *s = calloc(1, sizeof *s);
  struct client *c0 = calloc(1, sizeof *c0);
  int worker[2], client[2];
  if (!s || !c0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, worker) < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, client) < 0) abort();
  s->master = -1, s->master_eof = true, s->eof.next = -1, s->child.next_step = -1;
  s->worker.fd = worker[0], s->worker.passed_fd = -1;
  c0->fd = client[0], c0->version = 3, c0->write_timeout_ms = 1000, c0->go = true, c0->stall_since = -1;
  decoder_init(&c0->dec, frame_rules(3));
  client_begin(c0);
  s->keep = keep_new(MIN_RETAIN, (unsigned)below(4), 7);
  if (!s->keep) abort();
  keep_adopt(s, c0);
  s->keep->ring.next = below(3) * 3000; // some output, maybe wrapped
  unsigned char buf[64];
  for (size_t messages = 1 + below(40); messages > 0 && !s->worker.gone; messages--) {
    size_t len = message(buf), cut = below(len + 1);
    int fds = below(30) == 0 ? (int)below(4) : buf[0] == CONTROL_ATTACH ? 1 : 0;
    // The fds on the first byte, or (rarely) on a later piece.
    bool late = below(30) == 0 && cut > 0 && cut < len;
    if (cut > 0) send_with(worker[1], buf, cut, late ? 0 : fds);
    if (cut > 0) control_read(s, c0);
    if (cut < len && !s->worker.gone) send_with(worker[1], buf + cut, len - cut, late || cut == 0 ? fds : 0);
    if (!s->worker.gone) control_read(s, c0);
    drain(worker[1]);
  }
  struct keep *k = s->keep;
  faults += s->worker.gone;
  for (int i = 0; i < MAX_CONNS; i++) {
    attached += i > 0 && k->conns[i];
    if (k->conns[i]) conn_detach(s, k->conns[i], DETACH_ENDING, 0, "");
  }
  drain(worker[1]);
  if (s->worker.passed_fd >= 0) abort(); // control_read never leaves one behind
  close(worker[0]), close(worker[1]), close(client[1]);
  free(k->ring.data);
  free(k);
  free(c0);
  free(s);
}

int main(int argc, char **argv) {
  long runs = argc > 1 ? atol(argv[1]) : 20000;
  double budget = argc > 2 ? atof(argv[2]) : 3.0;
  int before = open_fds();
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  long done = 0;
  for (; done < runs; done++) {
    clock_gettime(CLOCK_MONOTONIC, &t);
    if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 > budget) break;
    one_session();
    if (open_fds() != before) {
      fprintf(stderr, "session %ld: %d descriptors open, %d before\n", done, open_fds(), before);
      return 4;
    }
  }
  printf("%ld sessions, %ld attached, %ld refused, %ld channel faults\n", done, attached, refused, faults);
  return 0;
}
