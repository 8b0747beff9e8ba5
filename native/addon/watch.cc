// FdWatcher: readiness of an fd we own (never a libuv-owned one) on Node's event loop, through uv_poll.
#include "addon.h"

#include <uv.h>

namespace opencode_pty {

namespace {

class Watcher;

// What the loop still needs after the JS object is done with it: uv_poll_t memory must stay valid
// until uv_close's callback, and a callback that closes its own watcher must still return through
// here safely. Freed only in OnClosed.
struct PollState {
  uv_poll_t poll;
  napi_env env;
  Watcher* owner;  // null once released
  Napi::FunctionReference callback;
  napi_async_context context = nullptr;
  int depth = 0;  // callbacks now running, so the async context outlives the one using it
};

void DestroyContext(PollState* state) {
  if (state->context != nullptr && state->depth == 0) {
    napi_async_destroy(state->env, state->context);
    state->context = nullptr;
  }
}

void OnClosed(uv_handle_t* handle) {
  delete static_cast<PollState*>(handle->data);
}

// Maps a WatchInterest object to libuv events; false after throwing.
bool ParseInterest(Napi::Env env, Napi::Value value, int* events) {
  if (!value.IsObject()) {
    ThrowType(env, "The \"interest\" argument must be an object");
    return false;
  }
  Napi::Object interest = value.As<Napi::Object>();
  const struct {
    const char* name;
    int event;
  } fields[] = {{"readable", UV_READABLE}, {"writable", UV_WRITABLE}, {"hangup", UV_DISCONNECT}};
  *events = 0;
  for (const auto& field : fields) {
    Napi::Value flag = interest.Get(field.name);
    if (env.IsExceptionPending()) return false;  // a throwing getter
    if (flag.IsUndefined()) continue;
    if (!flag.IsBoolean()) {
      ThrowType(env, std::string("The \"interest.") + field.name + "\" property must be of type boolean");
      return false;
    }
    if (flag.As<Napi::Boolean>().Value()) *events |= field.event;
  }
  return true;
}

class Watcher : public Napi::ObjectWrap<Watcher> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "FdWatcher",
                       {InstanceMethod<&Watcher::Update>("update"), InstanceMethod<&Watcher::Close>("close")});
  }

  // new FdWatcher(fd, interest, callback)
  explicit Watcher(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Watcher>(info) {
    Napi::Env env = info.Env();
    int fd, events;
    if (!ArgFd(info, 0, &fd) || !ParseInterest(env, info[1], &events)) return;
    if (!info[2].IsFunction()) {
      ThrowType(env, "The \"callback\" argument must be of type function");
      return;
    }
    uv_loop_t* loop = nullptr;
    if (napi_get_uv_event_loop(env, &loop) != napi_ok) {
      ThrowCode(env, "ERR_NO_EVENT_LOOP", "no event loop");
      return;
    }
    auto* state = new PollState();
    // Note: uv_poll_init makes the fd non-blocking, and fails with EEXIST on an fd libuv already polls.
    const int status = uv_poll_init(loop, &state->poll, fd);
    if (status < 0) {
      delete state;  // not yet known to the loop
      ThrowUv(env, status, "uv_poll_init");
      return;
    }
    state->poll.data = state;
    state->env = env;
    state->owner = this;
    state->callback = Napi::Persistent(info[2].As<Napi::Function>());
    state_ = state;
    if (napi_async_init(env, nullptr, Napi::String::New(env, "FdWatcher"), &state->context) != napi_ok) {
      state->context = nullptr;
    }
    // A worker thread that ends with the watcher open must close the handle before its loop closes.
    if (napi_add_env_cleanup_hook(env, OnEnvCleanup, this) == napi_ok) hooked_ = true;
    Apply(env, events);  // a throw here fails construction; the destructor then releases
  }

  ~Watcher() override { Release(false); }

 private:
  Napi::Value Update(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (state_ == nullptr) {
      ThrowCode(env, "ERR_WATCHER_CLOSED", "update() on a closed watcher");
      return Napi::Value();
    }
    int events;
    if (!ParseInterest(env, info[0], &events)) return Napi::Value();
    Apply(env, events);
    return env.Undefined();
  }

  Napi::Value Close(const Napi::CallbackInfo& info) {
    Release(true);
    return info.Env().Undefined();
  }

  // Starts or stops the poll; an active poll pins the JS object (the watcher may be unreachable from
  // JS while it still fires), a stopped one lets it be collected.
  bool Apply(Napi::Env env, int events) {
    if (events == 0) {
      uv_poll_stop(&state_->poll);
      Unpin();
      return true;
    }
    const int status = uv_poll_start(&state_->poll, events, OnPoll);
    if (status < 0) {
      ThrowUv(env, status, "uv_poll_start");
      return false;
    }
    if (!pinned_) {
      Ref();
      pinned_ = true;
    }
    return true;
  }

  void Unpin() {
    if (pinned_) {
      pinned_ = false;
      Unref();
    }
  }

  // Idempotent. Never calls into JS: it runs from close(), the finalizer and env cleanup.
  void Release(bool unpin) {
    if (hooked_) {
      napi_remove_env_cleanup_hook(Env(), OnEnvCleanup, this);
      hooked_ = false;
    }
    if (unpin) Unpin();
    PollState* state = state_;
    if (state == nullptr) return;
    state_ = nullptr;
    state->owner = nullptr;
    state->callback.Reset();
    DestroyContext(state);
    uv_close(reinterpret_cast<uv_handle_t*>(&state->poll), OnClosed);
  }

  static void OnEnvCleanup(void* arg) {
    auto* self = static_cast<Watcher*>(arg);
    self->hooked_ = false;  // being run, so already off the list
    self->Release(true);
  }

  static void OnPoll(uv_poll_t* poll, int status, int events) {
    auto* state = static_cast<PollState*>(poll->data);
    Watcher* self = state->owner;
    if (self == nullptr) return;
    napi_env env = state->env;
    Napi::HandleScope scope(env);
    Napi::Object receiver = self->Value();
    // On POLLERR libuv stops the poll itself and reports UV_EBADF (uv__poll_io).
    if (status < 0) self->Unpin();
    Napi::Object report = Napi::Object::New(env);
    report.Set("readable", (events & UV_READABLE) != 0);
    report.Set("writable", (events & UV_WRITABLE) != 0);
    report.Set("hangup", (events & UV_DISCONNECT) != 0);
    report.Set("error", status < 0);
    report.Set("status", status);
    Napi::Function callback = state->callback.Value();
    napi_value argument = report;
    napi_value result;
    // make_callback (not call_function) so microtasks and nextTicks run when the callback returns.
    state->depth++;
    napi_make_callback(env, state->context, receiver, callback, 1, &argument, &result);
    state->depth--;
    // From here on only `state` is used: the callback may have closed (and released) the watcher.
    bool pending = false;
    if (napi_is_exception_pending(env, &pending) == napi_ok && pending) {
      napi_value error;
      // Nobody up the stack can catch it: report it like any throwing event callback.
      if (napi_get_and_clear_last_exception(env, &error) == napi_ok) napi_fatal_exception(env, error);
    }
    if (state->owner == nullptr) DestroyContext(state);
  }

  PollState* state_ = nullptr;
  bool pinned_ = false;
  bool hooked_ = false;
};

Napi::Value Watch(const Napi::CallbackInfo& info) {
  auto* constructor = info.Env().GetInstanceData<Napi::FunctionReference>();
  return constructor->New({info[0], info[1], info[2]});
}

}  // namespace

void InitWatch(Napi::Env env, Napi::Object exports) {
  env.SetInstanceData(new Napi::FunctionReference(Napi::Persistent(Watcher::Define(env))));
  exports.Set("watch", Napi::Function::New(env, Watch, "watch"));
}

}  // namespace opencode_pty
