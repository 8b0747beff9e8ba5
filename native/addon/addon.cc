// The addon's entry point: registers every module's functions on the exports of `opencode_pty`.
#include "addon.h"

// binding.gyp builds this file alone until it lists every source; then it defines
// OPENCODE_PTY_SEPARATE_SOURCES and the sources are compiled one by one instead.
#ifndef OPENCODE_PTY_SEPARATE_SOURCES
#include "args.cc"
#include "close-pool.cc"
#include "dumpable.cc"
#include "errors.cc"
#include "fd-flags.cc"
#include "fd-passing.cc"
#include "fd-stat.cc"
#include "peer.cc"
#include "received-close.cc"
#include "sockets.cc"
#include "watch.cc"
#endif

namespace {

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  opencode_pty::InitClosePool(env, exports);
  opencode_pty::InitDumpable(env, exports);
  opencode_pty::InitFdFlags(env, exports);
  opencode_pty::InitFdPassing(env, exports);
  opencode_pty::InitFdStat(env, exports);
  opencode_pty::InitPeer(env, exports);
  opencode_pty::InitReceivedClose(env, exports);
  opencode_pty::InitSockets(env, exports);
  opencode_pty::InitWatch(env, exports);
  return exports;
}

}  // namespace

NODE_API_MODULE(opencode_pty, Init)
