// close(2) off the caller's thread, for a peer's descriptor whose close may not return (a FUSE file
// whose FLUSH is never answered; a Unix socket whose last close frees a queue holding one, or a
// lingering TCP socket nobody disarmed): at most kMaxCloseThreads threads, fed from one queue.
//
// A thread per descriptor was the first design; a burst of 253 copies of one socket a message then
// started threads faster than they ended, the bound was hit for a moment, and the descriptors past it
// were left open until the process exited. Queued descriptors are closed as soon as a thread is free;
// only a thread whose close never returns is lost, and a caller that drains a peer (fd-passing.cc)
// stops taking more once the queue is long, leaving the rest in flight, charged to the sender.
#include "addon.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace opencode_pty {

namespace {

// An idle thread waits this long for more work, then ends: an idle process keeps no threads.
constexpr int kIdleSeconds = 2;

struct ClosePool {
  std::mutex mutex;
  std::condition_variable work;
  std::deque<int> queue;
  int threads = 0;  // started and not ended
  int idle = 0;     // of those, waiting for work
  int busy = 0;     // of those, inside close(2)
};

// Never destroyed: a thread held in close(2) may outlive static destruction at exit.
ClosePool& Pool() {
  static ClosePool* pool = new ClosePool();
  return *pool;
}

// A Unix socket's last close frees what is queued on it in the closing thread (unix_release_sock): a
// peer's lingering TCP socket in that queue, whose linger nobody disarmed, would hold this thread for
// its linger time, and a burst of such sockets every thread. So it is sealed first (SHUT_RD: a stream
// or datagram sender then gets EPIPE, a connect ECONNREFUSED) and emptied, every descriptor on it
// received (its linger disarmed) and queued here in turn; a listener's pending connections, whose own
// queues its close would free, are accepted and go the same way. Its close then frees nothing.
// False when it stopped because the queue is long: the socket goes back to the queue. Asked only after
// a read that took something: an emptied socket is always closed and every turn takes a message away,
// so a queue of nothing but Unix sockets still drains (asked first, every thread put its socket back
// unread while the queue held more than the threads do, and nothing was ever closed again).
bool EmptyUnixSocket(int fd, std::unique_ptr<QueuedMessages>* reader) {
  shutdown(fd, SHUT_RD);
  int listening = 0;
  socklen_t size = sizeof listening;
  getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size);
  if (listening) {
    // accept(2) has no per-call non-blocking flag: the file's, and a receive timeout as a second guard
    // (unix_accept waits sk_rcvtimeo). Neither is needed once shut: a blocking accept then fails with
    // EINVAL at once (__skb_wait_for_more_packets sees RCV_SHUTDOWN), so a sender that kept a copy and
    // clears both again holds nothing.
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    const timeval timeout{0, 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  }
  for (;;) {
    std::vector<int> fds;
    if (listening) {
      const int connection = accept4(fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (connection < 0 && errno == EINTR) continue;
      if (connection < 0) return true;
      fds.push_back(connection);
    } else {
      if (!*reader) *reader = std::make_unique<QueuedMessages>();
      if (!(*reader)->Next(fd, &fds)) return true;
    }
    for (int received : fds) CloseOnThread(received);
    if (CloseQueueLong()) return false;
  }
}

void* CloseLoop(void*) {
  ClosePool& pool = Pool();
  std::unique_ptr<QueuedMessages> reader;  // this thread's buffers, made when a Unix socket comes
  std::unique_lock<std::mutex> lock(pool.mutex);
  for (;;) {
    if (pool.queue.empty()) {
      pool.idle++;
      const bool woken = pool.work.wait_for(lock, std::chrono::seconds(kIdleSeconds), [&] { return !pool.queue.empty(); });
      pool.idle--;
      if (!woken) break;
    }
    const int fd = pool.queue.front();
    pool.queue.pop_front();
    pool.busy++;
    lock.unlock();
    if (IsUnixSocket(fd) && !EmptyUnixSocket(fd, &reader)) {
      // Threads held (a file system that never answers) or a burst: a short rest, not a busy loop.
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      lock.lock();
      pool.busy--;
      pool.queue.push_back(fd);
      continue;
    }
    close(fd);
    lock.lock();
    pool.busy--;
  }
  pool.threads--;
  return nullptr;
}

// With the lock held: one more thread if none is idle for the queued work and the bound allows.
void StartThreadIfNeeded(ClosePool& pool) {
  if (pool.idle >= static_cast<int>(pool.queue.size()) || pool.threads >= kMaxCloseThreads) return;
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) return;
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  pthread_t thread;
  // EAGAIN (no thread to be had): the descriptor stays queued for a thread that is running or a later call.
  if (pthread_create(&thread, &attr, CloseLoop, nullptr) == 0) pool.threads++;
  pthread_attr_destroy(&attr);
}

}  // namespace

bool IsUnixSocket(int fd) {
  int domain = 0;
  socklen_t size = sizeof domain;
  return getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &size) == 0 && domain == AF_UNIX;
}

void CloseOnThread(int fd) {
  ClosePool& pool = Pool();
  std::lock_guard<std::mutex> lock(pool.mutex);
  pool.queue.push_back(fd);
  StartThreadIfNeeded(pool);
  if (pool.idle > 0) pool.work.notify_one();
}

bool CloseQueueLong() {
  ClosePool& pool = Pool();
  std::lock_guard<std::mutex> lock(pool.mutex);
  return pool.queue.size() >= kMaxQueuedCloses;
}

CloseCounts CloseCountsNow() {
  ClosePool& pool = Pool();
  std::lock_guard<std::mutex> lock(pool.mutex);
  return CloseCounts{pool.threads, pool.busy, static_cast<int>(pool.queue.size())};
}

namespace {

Napi::Value CloseDetached(const Napi::CallbackInfo& info) {
  int fd;
  if (!ArgFd(info, 0, &fd)) return Napi::Value();
  CloseOnThread(fd);
  return info.Env().Undefined();
}

Napi::Value PendingCloses(const Napi::CallbackInfo& info) {
  const CloseCounts counts = CloseCountsNow();
  return Napi::Number::New(info.Env(), counts.closing + counts.queued);
}

Napi::Value CloseThreads(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const CloseCounts counts = CloseCountsNow();
  Napi::Object result = Napi::Object::New(env);
  result.Set("threads", Napi::Number::New(env, counts.threads));
  result.Set("closing", Napi::Number::New(env, counts.closing));
  result.Set("queued", Napi::Number::New(env, counts.queued));
  result.Set("max", Napi::Number::New(env, kMaxCloseThreads));
  result.Set("maxQueued", Napi::Number::New(env, static_cast<double>(kMaxQueuedCloses)));
  return result;
}

}  // namespace

void InitClosePool(Napi::Env env, Napi::Object exports) {
  exports.Set("closeDetached", Napi::Function::New(env, CloseDetached, "closeDetached"));
  exports.Set("pendingCloses", Napi::Function::New(env, PendingCloses, "pendingCloses"));
  exports.Set("closeThreads", Napi::Function::New(env, CloseThreads, "closeThreads"));
}

}  // namespace opencode_pty
