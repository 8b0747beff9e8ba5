// A kept session outlives its worker (dialect 4, docs/architecture.md "Kept sessions across the
// supervisor"): with RENDEZVOUS's listening socket, the end of the worker's channel no longer ends the
// session. Every connection is let go (nobody in root knows them any more, and only root may write
// their last frame), the program runs on into the ring, and the next control channel is the first peer
// with uid 0 accepted on that socket: it is greeted with HELLO, as a channel at start is.
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "keep.h"

// The worker is gone: its end of the channel closed, every connection shut for every holder (PID 1
// keeps a copy of the START connection as the unit's stdout, so closing ours would not end it), each
// conn number free again. Their clients see the connection end and ATTACH again from their offset.
void keep_orphaned(struct session *s) {
  struct keep *k = s->keep;
  if (s->worker.fd >= 0) close(s->worker.fd);
  s->worker.fd = -1;
  if (s->worker.passed_fd >= 0) close(link_take_fd(&s->worker));
  s->worker.got = 0;
  for (int i = 0; i < MAX_CONNS; i++) {
    struct client *c = k->conns[i];
    if (!c) continue;
    shutdown(c->fd, SHUT_RDWR);
    conn_detach(s, c, DETACH_CLIENT_GONE, 0, ""); // told to nobody: the link is gone
  }
  k->controller = NULL;
  memset(k->used, 0, sizeof k->used);
  k->used[0] |= 1; // conn 0 is the START's, never given again
  // Peers that queued while the worker lived are let go unread: any uid-0 process may connect (root owns
  // the directory, so no capability is asked), and the oldest queued one would otherwise become the
  // channel. Only a peer that connects once the worker is gone counts (the next worker connects then).
  for (int fd; (fd = accept4(s->rendezvous, NULL, NULL, SOCK_CLOEXEC)) >= 0 || errno == EINTR;)
    if (fd >= 0) close(fd);
}

// A peer on the rendezvous socket: root's next worker (the directory holding the socket is root's
// alone, and the peer's credentials say so again), or nobody. The channel starts as at start: HELLO
// first, then the program's end once more if it came meanwhile (the new worker learns it here).
void keep_accept(struct session *s) {
  int fd = accept4(s->rendezvous, NULL, NULL, SOCK_CLOEXEC);
  if (fd < 0) return; // EAGAIN (the listener is non-blocking), or a peer gone before we took it
  struct ucred cred;
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || len != sizeof cred || cred.uid != 0) {
    close(fd);
    return;
  }
  struct link *link = &s->worker;
  link->fd = fd;
  link->gone = false;
  link->ended = false;
  link->got = 0;
  link->passed_fd = -1;
  s->keep->program_ended_sent = false;
  control_send_hello(link);
}
