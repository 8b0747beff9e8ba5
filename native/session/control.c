// The helper's end of the control channel: ENV, GO (with STARTED), TERMINATE and KILL from the worker; LOG, STOP and the
// one END report to it. The worker treats everything here as untrusted; the helper keeps it bounded.
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "helper.h"

static void put_be16(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 8), p[1] = (unsigned char)v;
}

static void put_be32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16), p[2] = (unsigned char)(v >> 8), p[3] = (unsigned char)v;
}

static void put_be64(unsigned char *p, uint64_t v) {
  put_be32(p, (uint32_t)(v >> 32));
  put_be32(p + 4, (uint32_t)v);
}

// All of len bytes out (POLLOUT) or in (POLLIN), blocking in effect without touching the socket's
// flags: messages are small and the worker always reads, and it sends every message whole (GO's
// STARTED with ENV, into an empty buffer), so this waits for nothing in practice. -1 when the worker
// is gone first.
static int transfer_all(unsigned char *p, size_t len, short direction) {
  while (len > 0) {
    ssize_t n = direction == POLLOUT ? send(r.control, p, len, MSG_DONTWAIT | MSG_NOSIGNAL) : recv(r.control, p, len, MSG_DONTWAIT);
    if (n > 0) {
      p += n, len -= (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      struct pollfd q = {.fd = r.control, .events = direction};
      if (poll(&q, 1, -1) < 0 && errno != EINTR) return -1;
      continue;
    }
    return -1;
  }
  return 0;
}

int control_write_all(const unsigned char *data, size_t len) {
  return transfer_all((unsigned char *)data, len, POLLOUT); // sending only reads through it
}

static int read_exact_control(void *buf, size_t len) {
  return transfer_all(buf, len, POLLIN);
}

// -1 when the worker is gone.
static int send_message(uint8_t type, const unsigned char *payload, size_t len) {
  unsigned char header[CONTROL_HEADER_SIZE] = {type};
  put_be32(header + 1, (uint32_t)len);
  if (control_write_all(header, sizeof header) < 0) return -1;
  return len > 0 ? control_write_all(payload, len) : 0;
}

// Cuts at a UTF-8 character boundary so the worker's strict decoding never sees a torn character.
static size_t utf8_cut(const char *text, size_t max) {
  size_t len = strlen(text);
  if (len <= max) return len;
  while (max > 0 && ((unsigned char)text[max] & 0xc0) == 0x80) max--;
  return max;
}

// Diagnostics travel to the worker, which writes them to the journal with the session's unit name;
// a session gets MAX_LOGS of them, so a misbehaving program cannot flood the journal through us.
void say(int priority, const char *fmt, ...) {
  if (r.logs_sent >= MAX_LOGS) return;
  char text[MAX_LOG_TEXT + 1];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  if (++r.logs_sent == MAX_LOGS) snprintf(text, sizeof text, "further diagnostics of this session are dropped");
  unsigned char payload[1 + MAX_LOG_TEXT];
  payload[0] = (unsigned char)priority;
  size_t len = utf8_cut(text, MAX_LOG_TEXT);
  memcpy(payload + 1, text, len);
  if (r.control >= 0) send_message(CONTROL_LOG, payload, 1 + len);
  else fprintf(stderr, TAG "%s\n", text);
}

void control_send_stop(void) {
  send_message(CONTROL_STOP, NULL, 0);
}

// The session's figures, read while this process keeps its cgroup alive (figures.c), for the client's
// end record: the worker's last frame need not wait for systemd's.
_Static_assert(FIGURES_SIZE == 8 * FIGURE_COUNT, "one u64 a figure");

static void control_send_figures(void) {
  uint64_t figures[FIGURE_COUNT];
  read_figures(figures);
  unsigned char payload[FIGURES_SIZE];
  for (int i = 0; i < FIGURE_COUNT; i++) put_be64(payload + 8 * i, figures[i]);
  send_message(CONTROL_FIGURES, payload, sizeof payload);
}

// The one END: how the data phase ended, what crossed (OUTPUT payload bytes the client gets, the
// remainder's included), and the rest of the frame in progress (at
// most one frame), which the worker writes before its last frame so the client never sees it torn.
void control_send_end(void) {
  control_send_figures();
  static unsigned char payload[MAX_CONTROL_PAYLOAD];
  const unsigned char *rest = NULL;
  size_t rest_len = 0;
  uint64_t bytes_out = r.bytes_out;
  if (r.started_off > 0 && r.started_off < r.started_len) rest = r.started + r.started_off, rest_len = r.started_len - r.started_off;
  else if (r.urgent_off > 0 && r.urgent_off < r.urgent_len) rest = r.urgent + r.urgent_off, rest_len = r.urgent_len - r.urgent_off;
  else if (r.out_off > 0 && r.out_off < r.out_len) {
    rest = r.out + r.out_off, rest_len = r.out_len - r.out_off;
    bytes_out += r.out_len - HEADER_SIZE; // the worker sends the rest: the client gets the whole frame
  }
  size_t text_len = utf8_cut(r.end_text, MAX_REPORT_TEXT);
  payload[0] = (unsigned char)r.end_reason;
  put_be16(payload + 1, r.end_code);
  put_be64(payload + 3, r.bytes_in);
  put_be64(payload + 11, bytes_out);
  put_be32(payload + 19, (uint32_t)rest_len);
  if (rest_len) memcpy(payload + END_FIXED_SIZE, rest, rest_len);
  memcpy(payload + END_FIXED_SIZE + rest_len, r.end_text, text_len);
  send_message(CONTROL_END, payload, END_FIXED_SIZE + rest_len + text_len);
}

// The program's pid, sent before anything is written to the client: the worker takes "no PID" after
// the unit's end to mean that nothing was, so the client's write side was never the helper's.
int control_send_pid(pid_t pid) {
  unsigned char payload[4];
  put_be32(payload, (uint32_t)pid);
  return send_message(CONTROL_PID, payload, sizeof payload);
}

// GO's payload: the STARTED frame the worker encoded for this session (docs/protocol.md), written
// before anything else. The helper knows the two pids it names: its own (the unit's main process) and
// the program's. Writing it here rather than in the worker saves the worker's turn between the fork
// and the first output: the PID message out, STARTED and GO back (two wake-ups of two processes).
// -1 when it is not a STARTED of this session's version.
static int take_started(uint32_t len) {
  size_t pids = r.version >= 2 ? 8 : 4;
  if (len < HEADER_SIZE + pids + 1 || len > sizeof r.started) return -1;
  if (read_exact_control(r.started, len) < 0) return -1;
  uint32_t payload = (uint32_t)r.started[1] << 24 | (uint32_t)r.started[2] << 16 | (uint32_t)r.started[3] << 8 | r.started[4];
  if (r.started[0] != FRAME_STARTED || payload != len - HEADER_SIZE) return -1;
  // Version 1: mainPid, unit. Version 2: programPid, mainPid, the rest.
  if (r.version >= 2) {
    put_be32(r.started + HEADER_SIZE, (uint32_t)r.child);
    put_be32(r.started + HEADER_SIZE + 4, (uint32_t)getpid());
  } else {
    put_be32(r.started + HEADER_SIZE, (uint32_t)getpid());
  }
  r.started_len = len;
  r.started_off = 0;
  return 0;
}

// Reads what the worker sent: 0 fine, -1 the worker is gone or sent what it never sends.
int control_read(void) {
  for (;;) {
    ssize_t n = recv(r.control, r.ctl_in + r.ctl_got, sizeof r.ctl_in - r.ctl_got, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    if (n <= 0) return -1;
    r.ctl_got += (size_t)n;
    if (r.ctl_got < sizeof r.ctl_in) continue;
    r.ctl_got = 0;
    uint32_t len = (uint32_t)r.ctl_in[1] << 24 | (uint32_t)r.ctl_in[2] << 16 | (uint32_t)r.ctl_in[3] << 8 | r.ctl_in[4];
    if (r.ctl_in[0] == CONTROL_GO && !r.go) {
      if (take_started(len) < 0) return -1;
      r.go = true;
      continue;
    }
    if (len != 0) return -1;
    switch (r.ctl_in[0]) {
    case CONTROL_TERMINATE:
      fail(END_TERMINATED, ERR_SHUTDOWN, "terminated by the supervisor");
      break;
    case CONTROL_KILL:
      kill_cgroup_others();
      break;
    default:
      return -1;
    }
  }
}

static bool same_name(const char *a, const char *b) {
  size_t len = strcspn(a, "=");
  return strncmp(a, b, len) == 0 && b[len] == '=';
}

// The program's environment, read before the fork (--env-from-control): the helper's own environment
// (what systemd sets for the unit: HOME, USER, PATH ...) with the worker's entries over it. The helper
// itself never takes these (they are not in the unit's Environment=): they reach execve only. NULL on
// success, else why the message is refused; nothing here grows past MAX_ENV_PAYLOAD and MAX_ENV_ENTRIES.
const char *control_read_env(char ***envp) {
  static char payload[MAX_ENV_PAYLOAD];
  static char *entries[MAX_ENV_ENTRIES];
  unsigned char header[CONTROL_HEADER_SIZE];
  if (read_exact_control(header, sizeof header) < 0) return "the control channel ended before the environment came";
  if (header[0] != CONTROL_ENV) return "the first control message is not ENV";
  uint32_t len = (uint32_t)header[1] << 24 | (uint32_t)header[2] << 16 | (uint32_t)header[3] << 8 | header[4];
  if (len > MAX_ENV_PAYLOAD) return "ENV is larger than 65536 bytes";
  if (read_exact_control(payload, len) < 0) return "the control channel ended inside ENV";
  if (len > 0 && payload[len - 1] != '\0') return "ENV does not end with a NUL";
  size_t count = 0;
  for (size_t off = 0; off < len;) {
    char *entry = payload + off;
    size_t entry_len = strlen(entry);
    const char *eq = memchr(entry, '=', entry_len);
    if (eq == NULL || eq == entry) return "an ENV entry is not NAME=value";
    if (count == MAX_ENV_ENTRIES) return "ENV has more than 129 entries";
    entries[count++] = entry;
    off += entry_len + 1;
  }
  extern char **environ;
  size_t own = 0;
  while (environ[own]) own++;
  char **merged = calloc(own + count + 1, sizeof *merged);
  if (merged == NULL) return "out of memory";
  size_t k = 0;
  for (size_t i = 0; i < own; i++) {
    bool overridden = false;
    for (size_t j = 0; j < count && !overridden; j++) overridden = same_name(entries[j], environ[i]);
    if (!overridden) merged[k++] = environ[i];
  }
  for (size_t j = 0; j < count; j++) merged[k++] = entries[j];
  merged[k] = NULL;
  *envp = merged;
  return NULL;
}
