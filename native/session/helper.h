// The session helper's state and the functions its files share. One relay per process, fixed buffers:
// nothing here grows with what a peer sends.
#ifndef OPENCODE_PTY_SESSION_HELPER_H
#define OPENCODE_PTY_SESSION_HELPER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "control.h"
#include "protocol.h"

#define TAG "opencode-pty-session: "

enum decode_state { WANT_HEADER, WANT_INPUT, WANT_SMALL };

// The client's frames, decoded in place as they arrive (a push state machine): headers are judged
// the moment their 5 bytes are in, INPUT payloads stream into the input ring, other payloads are at
// most 4 bytes and collected in `small`.
struct decoder {
  const struct frame_rule *rules;
  enum decode_state state;
  unsigned char small[HEADER_SIZE];
  size_t got;
  uint8_t type;
  uint32_t want; // payload bytes still to come
};

struct relay {
  int client, control, master, sigfd;
  unsigned version;
  int write_timeout_ms;

  pid_t child;
  int status; // wait status, valid once child_done
  bool child_done;
  bool master_hup; // poll saw POLLHUP: every slave may be closed, read until EIO
  bool master_eof; // read gave EIO: nobody holds the terminal any more

  bool go;         // the worker handed over the client's write side (GO)
  bool stopping;   // the client sent STOP
  int end_reason;  // set once: the data phase is over
  uint16_t end_code;
  char end_text[MAX_REPORT_TEXT];

  // Toward the client: STARTED first (GO's payload, once), then at most one OUTPUT frame and one
  // CREDIT frame; a frame once started is finished before anything else goes out, so frames never
  // interleave.
  unsigned char started[HEADER_SIZE + MAX_FRAME_PAYLOAD];
  size_t started_len, started_off;
  unsigned char out[HEADER_SIZE + MAX_IO_PAYLOAD];
  size_t out_len, out_off;
  unsigned char urgent[HEADER_SIZE + 4];
  size_t urgent_len, urgent_off;
  uint32_t send_credit;  // OUTPUT payload bytes the client still accepts
  uint32_t credit_owed;  // input credit to grant in the next CREDIT frame
  int outq_limit;        // SIOCOUTQ above this: do not read the terminal (sndbuf / 4)

  // From the client: INPUT waiting for the terminal. Never more than the credit granted, so a ring of
  // INITIAL_WINDOW bytes always has room.
  struct decoder dec;
  unsigned char ring[INITIAL_WINDOW];
  size_t ring_head, ring_len;
  uint32_t recv_remaining; // INPUT bytes the client may still send
  uint32_t ungranted;      // consumed, not yet granted back

  // END_INPUT (version 2): once the program has read everything before it, VEOF; again each time it has
  // read that too, so every read after the end of input sees end of file, as with a pipe.
  bool input_ended;
  int64_t eof_next;  // ms: when to look at the terminal's input queue next (-1: not feeding)
  int eof_delay;     // ms until the next look while the program has not read what waits

  uint64_t bytes_in, bytes_out;
  // The client's socket made no progress since stall_since (ms, -1: not stalled), at SIOCOUTQ stall_outq.
  int64_t stall_since;
  int stall_outq;

  // Control channel from the worker: whole 5-byte messages.
  unsigned char ctl_in[CONTROL_HEADER_SIZE];
  size_t ctl_got;
  int logs_sent;
};

extern struct relay r;

// main.c
_Noreturn void exit_like(int status);
void hangup_child(void);
void reap(bool block);
void set_winsize(int fd, unsigned rows, unsigned cols);

// decode.c: -1 when the client broke the protocol (end_reason is set then).
int decode(const unsigned char *data, size_t len);
void fail(int reason, uint16_t code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void consume_input(size_t bytes);

// control.c
void say(int priority, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int control_read(void);
void control_send_stop(void);
void control_send_end(void);
int control_send_pid(pid_t pid);
int control_write_all(const unsigned char *data, size_t len);
const char *control_read_env(char ***envp);

// cgroup.c
bool cgroup_of(const char *pid, char *path, size_t size);
void kill_cgroup_others(void);

// figures.c: the session cgroup's figures in the order of control.h's enum figure (of the cgroup
// directory `dir` for read_figures_at).
void read_figures(uint64_t figures[FIGURE_COUNT]);
void read_figures_at(const char *dir, uint64_t figures[FIGURE_COUNT]);

// relay.c
_Noreturn void relay(void);
_Noreturn void worker_gone(void);
int64_t now_ms(void);

// end-input.c
void end_input(void);
void feed_eof(void);

#endif
