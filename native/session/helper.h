// The session helper's state and the functions its files share. Two structures, passed to every
// function that needs them, no global state: the session (terminal, program, its end, the worker's
// channel) and its client (socket, decoder, credit, what waits to be written). Fixed buffers: nothing
// here grows with what a peer sends.
#ifndef OPENCODE_PTY_SESSION_HELPER_H
#define OPENCODE_PTY_SESSION_HELPER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "control.h"
#include "protocol.h"

struct keep;
struct session;
struct client;

#define TAG "opencode-pty-session: "

// The program (child.c). Its end, once the session's end is decided and it still runs, is driven in
// steps (a hang-up, SIGTERM, SIGKILL, each stop_timeout_ms after the one before), as the worker's stop is.
enum stop_step { STEP_NONE, STEP_HUNG_UP, STEP_TERMINATED, STEP_KILLED };

struct child {
  pid_t pid;  // 0 before the fork
  int status; // wait status, valid once done
  bool done;
  enum stop_step step;
  int64_t next_step; // ms (now_ms) when the next step is due, -1 none
};

// The worker's end of the control channel (control.c).
struct link {
  int fd;
  bool gone; // the worker ended the channel, broke its rules, or a send to it failed: it will not act
  bool ended; // END went out (or could not): it is the last message, nothing follows it
  unsigned char in[CONTROL_HEADER_SIZE + MAX_RENDEZVOUS_CGROUP]; // one message: its header, then ATTACH's or RENDEZVOUS's payload
  size_t got;
  int passed_fd; // the fd that came with the message being read (ATTACH's), -1 none
  int logs_sent;
};

// How the session ended (end.c, its only writer): set once.
struct ending {
  int reason; // enum end_reason; 0 while the session runs
  uint16_t code;
  char text[MAX_REPORT_TEXT];
};

// END_INPUT (version 2, end-input.c): once the program has read everything before it, VEOF; again
// each time it has read that too, so every read after the end of input sees end of file, as with a pipe.
struct end_of_input {
  int64_t next; // ms: when to look at the terminal's input queue next (-1: not feeding)
  int delay;    // ms until the next look while the program has not read what waits
};

struct session {
  int master;      // the terminal's master, -1 once hung up
  bool master_eof; // read gave EIO, or the helper hung up: nobody can read the terminal any more
  struct child child;
  struct link worker;
  struct ending end;
  struct end_of_input eof;
  bool stopping; // the client sent STOP
  int stop_timeout_ms;
  int program_oom_score_adj; // --program-oom-score-adj: the program's oom_score_adj (-1: left as inherited)
  int oom_raiser;            // under Landlock: the socket to the process that raises it (oom.c), -1 none
  pid_t oom_raiser_pid;      // reaped by child_reap(), then 0
  // The unit STARTED names (GO's payload): the only cgroup whose processes the helper may signal.
  char unit[MAX_UNIT_NAME + 1];
  struct keep *keep; // --keep: the ring and the connections (keep.h); NULL for a session that is not kept
  int landlock;      // the workspace profile's Landlock ruleset (landlock.c), -1 none; the child enforces it again
  int rendezvous;    // RENDEZVOUS's listening socket (a kept session outlives its worker), -1 none
  char rendezvous_cgroup[MAX_RENDEZVOUS_CGROUP + 1]; // RENDEZVOUS's payload: where the next channel's peer must be
  unsigned refused;  // peers refused at the rendezvous since the last channel, told to the next one
  char refusal[256]; // the last of them, said
};

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
  bool input_ended; // END_INPUT came
};

struct client {
  int fd;
  unsigned version;
  int write_timeout_ms;
  bool go; // the worker handed over the client's write side (GO)

  // Toward the client: STARTED first (GO's payload, once), then at most one OUTPUT frame and one
  // CREDIT frame; a frame once started is finished before anything else goes out, so frames never
  // interleave.
  unsigned char started[HEADER_SIZE + MAX_FRAME_PAYLOAD];
  size_t started_len, started_off;
  unsigned char out[HEADER_SIZE + MAX_IO_PAYLOAD];
  size_t out_len, out_off;
  unsigned char urgent[HEADER_SIZE + 4];
  size_t urgent_len, urgent_off;
  uint32_t send_credit; // OUTPUT payload bytes the client still accepts
  uint32_t credit_owed; // input credit to grant in the next CREDIT frame
  int outq_limit;       // SIOCOUTQ above this: do not read the terminal (sndbuf / 4)

  // From the client: INPUT waiting for the terminal. Never more than the credit granted, so a ring of
  // INITIAL_WINDOW bytes always has room.
  struct decoder dec;
  unsigned char ring[INITIAL_WINDOW];
  size_t ring_head, ring_len;
  uint32_t recv_remaining; // INPUT bytes the client may still send
  uint32_t ungranted;      // consumed, not yet granted back

  uint64_t bytes_in, bytes_out;
  // The client's socket made no progress since stall_since (ms, -1: not stalled), at SIOCOUTQ stall_outq.
  int64_t stall_since;
  int stall_outq;

  // A kept session's connection (keep.h; unused otherwise): its number (0: the START connection), its
  // role, the offset of the next output byte it gets, small frames (ATTACHED's followers, TRUNCATED,
  // CONTROLLER_CHANGED) sent whole at a frame boundary, and how it failed (its own end, not the session's).
  uint8_t conn;
  uint8_t role;
  uint64_t cursor;
  unsigned char notice[64];
  size_t notice_len, notice_off;
  bool change_pending; // a CONTROLLER_CHANGED waits for room in notice
  struct ending fault;
};

// end.c: the only writer of the session's end, and the one place that acts on it.
void end_with(struct session *s, int reason, uint16_t code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void check_done(struct session *s, struct client *c, bool idle_after_exit);
_Noreturn void give_up(struct session *s, struct client *c, int exit_code, const char *fmt, const char *detail);

// child.c
int64_t now_ms(void);
int timeout_earlier(int a, int b);
int timeout_until(int64_t deadline);
void child_signals(struct session *s, int sigfd);
void close_from(unsigned first);
pid_t child_start(struct session *s, int slave, char **argv, char **env);

// oom.c: the program's OOM score raised from outside the Landlock domain (a socket for the child, or -1).
int oom_raiser_start(int adj, pid_t *pid);
void oom_raise_by(int fd);
void child_reap(struct session *s);
void child_hang_up(struct session *s);
void child_stop_begin(struct session *s);
void child_stop_step(struct session *s);
int child_stop_timeout(const struct session *s);
_Noreturn void exit_like(int status);

// cwd.c: the START's directory `cwd` opened again at `path`, in the unit's own mount namespace, and
// checked to be the same directory (device and inode): its fd (close-on-exec), or -1 with `why` said.
int cwd_reenter(const char *path, int cwd, char *why, size_t size);

// terminal.c
int terminal_open(struct session *s, unsigned rows, unsigned cols);
void set_winsize(struct session *s, int fd, unsigned rows, unsigned cols);
bool terminal_readable(const struct session *s);
int terminal_read(struct session *s, struct client *c);
void terminal_write(struct session *s, struct client *c);

// client.c: a connection's fault. The session's end when it is not kept; a kept session's connection
// records it and is let go (DETACHED) while the session goes on. The first fault wins.
void client_fault(struct session *s, struct client *c, int reason, uint16_t code, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

// decode.c: -1 when the client broke the protocol (client_fault is set then). The frames' effects are
// the functions below it calls (frames.c; the decoder's test driver has its own).
void decoder_init(struct decoder *dec, const struct frame_rule *rules);
int decode(struct session *s, struct client *c, const unsigned char *data, size_t len);
void on_input(struct session *s, struct client *c, const unsigned char *data, size_t len);
void on_resize(struct session *s, unsigned rows, unsigned cols);
void on_signal(struct session *s, int sig);
void on_stop(struct session *s, struct client *c);
void on_end_input(struct session *s);

// client.c
void client_begin(struct client *c);
void consume_input(struct client *c, size_t bytes);
int client_write(struct client *c, bool *blocked);
void client_read(struct session *s, struct client *c);
int client_outq(const struct client *c);
void check_stall(struct session *s, struct client *c, bool waiting);

// control.c
void say(struct link *link, int priority, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void control_send_hello(struct link *link);
char **warm_wait(struct session *s, char *argv0, int *argc, int *cwd, int *client);
void control_read(struct session *s, struct client *c);
void control_send_stop(struct link *link);
void control_send_end(struct session *s, const struct client *c);
int control_send_message(struct link *link, uint8_t type, const unsigned char *payload, size_t len);
void control_send_report(struct session *s, uint64_t bytes_in, uint64_t bytes_out, const unsigned char *rest, size_t rest_len);
size_t utf8_cut(const char *text, size_t max);
int transfer_all(int fd, unsigned char *p, size_t len, short direction);
int link_take_fd(struct link *link);
int control_send_pid(struct link *link, pid_t pid);
const char *control_read_env(struct link *link, char ***envp);

// keep.c, keep-*.c: a kept session (keep.h has the rest).
bool keep_attach(struct session *s, const unsigned char *payload, int fd);
bool keep_rendezvous_cgroup(struct session *s, const unsigned char *path, size_t len);
void keep_send_state(struct session *s);
bool keep_behind(const struct session *s, const struct client *c);

// cgroup.c
bool cgroup_of(const char *pid, char *path, size_t size);
void signal_unit_others(struct session *s, int sig);

// figures.c: the session cgroup's figures in the order of control.h's enum figure (of the cgroup
// directory `dir` for read_figures_at).
void read_figures(uint64_t figures[FIGURE_COUNT]);
void read_figures_at(const char *dir, uint64_t figures[FIGURE_COUNT]);

// relay.c
_Noreturn void relay(struct session *s, struct client *c, int sigfd);

// end-input.c
void end_input(struct session *s);
void feed_eof(struct session *s, const struct client *c);

#endif
