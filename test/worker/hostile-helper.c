// A session helper gone hostile, as one whose memory a client's bytes had corrupted would be: it runs
// as the client's user in the session's unit and speaks the control channel (fd 2) as it likes. The
// worker must treat every message as untrusted (src/control/helper-channel.ts).
//
// Invoked as the worker invokes the real helper: [--options] ROWS COLS MODE. It reads ENV, forks a
// child that sleeps (the "program"), reports its pid, waits for GO and writes its STARTED as the real
// helper does (the client then holds a started session), then:
//   stop-flood  sends STOP messages without end
//   end-lines   reports END (internal) with a text holding line breaks, then exits
//   junk        sends a message of an unknown type, then exits as a finished program's helper would
//   figures     reports FIGURES of its own making (one beyond what the wire carries), then END (exit)
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

enum { CONTROL = 2, GO = 0x01, STOP = 0x42, END = 0x43, PID = 0x44, FIGURES = 0x45 };

static int read_exact(void *buf, size_t len) {
  unsigned char *p = buf;
  while (len > 0) {
    ssize_t n = read(CONTROL, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    p += n, len -= (size_t)n;
  }
  return 0;
}

static int write_all(const void *buf, size_t len) {
  const unsigned char *p = buf;
  while (len > 0) {
    ssize_t n = send(CONTROL, p, len, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    p += n, len -= (size_t)n;
  }
  return 0;
}

static void put_be32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16), p[2] = (unsigned char)(v >> 8), p[3] = (unsigned char)v;
}

static int message(unsigned char type, const void *payload, uint32_t len) {
  unsigned char header[5] = {type};
  put_be32(header + 1, len);
  return write_all(header, sizeof header) == 0 && (len == 0 || write_all(payload, len) == 0) ? 0 : -1;
}

static int end_report(unsigned char reason, const char *text) {
  unsigned char payload[23 + 1024] = {reason};
  size_t len = strlen(text);
  memcpy(payload + 23, text, len); // code, counts and remainder length stay 0
  return message(END, payload, (uint32_t)(23 + len));
}

int main(int argc, char **argv) {
  prctl(PR_SET_DUMPABLE, 0);
  // As the real helper does, it lives through the stop's SIGTERM and SIGHUP.
  signal(SIGTERM, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  int i = 1, version = 1;
  for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++)
    if (strncmp(argv[i], "--protocol=", 11) == 0) version = atoi(argv[i] + 11);
  if (argc - i < 3) return 2;
  const char *mode = argv[i + 2];
  unsigned char header[5];
  static unsigned char env[65536];
  if (read_exact(header, sizeof header) < 0) return 3;
  uint32_t len = (uint32_t)header[1] << 24 | (uint32_t)header[2] << 16 | (uint32_t)header[3] << 8 | header[4];
  if (len > sizeof env || read_exact(env, len) < 0) return 3;
  pid_t child = fork();
  if (child < 0) return 4;
  if (child == 0) {
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    for (;;) pause();
  }
  unsigned char pid[4];
  put_be32(pid, (uint32_t)child);
  if (message(PID, pid, sizeof pid) < 0) return 5;
  if (read_exact(header, sizeof header) < 0 || header[0] != GO) return 6;
  static unsigned char started[5 + 65536];
  len = (uint32_t)header[1] << 24 | (uint32_t)header[2] << 16 | (uint32_t)header[3] << 8 | header[4];
  if (len < 13 || len > sizeof started || read_exact(started, len) < 0) return 6;
  if (version >= 2) put_be32(started + 5, (uint32_t)child), put_be32(started + 9, (uint32_t)getpid());
  else put_be32(started + 5, (uint32_t)getpid());
  for (size_t off = 0; off < len;) {
    ssize_t n = send(1, started + off, len - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return 6;
    off += (size_t)n;
  }
  int status = 0;
  if (strcmp(mode, "stop-flood") == 0) {
    static unsigned char stops[64 * 1024 / 5 * 5];
    for (size_t k = 0; k < sizeof stops; k += 5) stops[k] = STOP;
    while (write_all(stops, sizeof stops) == 0) {
    }
  } else if (strcmp(mode, "end-lines") == 0) {
    end_report(7, "worn out\nsession opencode-pty-session-0.service could not be cleaned up: forged");
  } else if (strcmp(mode, "figures") == 0) {
    // CPU 4.242 ms, memory 2^60 (past the wire's 2^53), tasks unavailable, 7 and 0 bytes of IO.
    uint64_t figures[6] = {4242000, (uint64_t)1 << 60, 65536, UINT64_MAX, 7, 0};
    unsigned char payload[48];
    for (int k = 0; k < 6; k++) put_be32(payload + 8 * k, (uint32_t)(figures[k] >> 32)), put_be32(payload + 8 * k + 4, (uint32_t)figures[k]);
    message(FIGURES, payload, sizeof payload);
    end_report(1, "");
  } else if (strcmp(mode, "junk") == 0) {
    message(0x99, NULL, 0);
  } else {
    status = 7;
  }
  kill(child, SIGKILL);
  return status;
}
