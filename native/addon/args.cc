// Argument checks for the exported functions: wrong types throw TypeError, bad values RangeError, never a crash.
#include "addon.h"

#include <climits>
#include <cmath>
#include <cstring>
#include <string>

namespace opencode_pty {

bool ArgInt(const Napi::CallbackInfo& info, size_t index, const char* name, int64_t min, int64_t max,
            int64_t* out) {
  Napi::Value value = info[index];
  if (!value.IsNumber()) {
    ThrowType(info.Env(), std::string("The \"") + name + "\" argument must be of type number");
    return false;
  }
  const double number = value.As<Napi::Number>().DoubleValue();
  // Compare as doubles first so NaN, infinities and huge values never reach an integer conversion.
  if (!std::isfinite(number) || std::trunc(number) != number || number < static_cast<double>(min) ||
      number > static_cast<double>(max)) {
    ThrowRange(info.Env(), std::string("The value of \"") + name + "\" is out of range. It must be an integer >= " +
                               std::to_string(min) + " and <= " + std::to_string(max));
    return false;
  }
  *out = static_cast<int64_t>(number);
  return true;
}

bool ArgFd(const Napi::CallbackInfo& info, size_t index, int* out) {
  int64_t value;
  if (!ArgInt(info, index, "fd", 0, INT_MAX, &value)) return false;
  *out = static_cast<int>(value);
  return true;
}

bool ArgString(const Napi::CallbackInfo& info, size_t index, const char* name, std::string* out) {
  Napi::Value value = info[index];
  if (!value.IsString()) {
    ThrowType(info.Env(), std::string("The \"") + name + "\" argument must be of type string");
    return false;
  }
  std::string text = value.As<Napi::String>().Utf8Value();
  // A NUL would silently cut a path short in the kernel's view.
  if (text.find('\0') != std::string::npos) {
    ThrowType(info.Env(), std::string("The \"") + name + "\" argument must not contain null bytes");
    return false;
  }
  *out = std::move(text);
  return true;
}

bool ArgBool(const Napi::CallbackInfo& info, size_t index, const char* name, bool* out) {
  Napi::Value value = info[index];
  if (!value.IsBoolean()) {
    ThrowType(info.Env(), std::string("The \"") + name + "\" argument must be of type boolean");
    return false;
  }
  *out = value.As<Napi::Boolean>().Value();
  return true;
}

bool ArgBytes(const Napi::CallbackInfo& info, size_t index, uint8_t** data, size_t* offset, size_t* length) {
  Napi::Value value = info[index];
  if (!value.IsTypedArray() || value.As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array) {
    ThrowType(info.Env(), "The \"buffer\" argument must be a Buffer or Uint8Array");
    return false;
  }
  Napi::Uint8Array bytes = value.As<Napi::Uint8Array>();
  const int64_t size = static_cast<int64_t>(bytes.ElementLength());
  int64_t start, count;
  if (!ArgInt(info, index + 1, "offset", 0, size, &start)) return false;
  if (!ArgInt(info, index + 2, "length", 0, size - start, &count)) return false;
  *data = bytes.Data();
  *offset = static_cast<size_t>(start);
  *length = static_cast<size_t>(count);
  return true;
}

// Reads the optional fds argument: undefined/null for none, else an array of at most
// kMaxFdsPerMessage descriptors.
bool ArgFdList(const Napi::CallbackInfo& info, size_t index, std::vector<int>* out) {
  Napi::Value value = info[index];
  if (value.IsUndefined() || value.IsNull()) return true;
  if (!value.IsArray()) {
    ThrowType(info.Env(), "The \"fds\" argument must be an array of numbers");
    return false;
  }
  Napi::Array list = value.As<Napi::Array>();
  if (list.Length() > kMaxFdsPerMessage) {
    ThrowRange(info.Env(), "The \"fds\" argument may hold at most 253 descriptors");
    return false;
  }
  for (uint32_t i = 0; i < list.Length(); i++) {
    Napi::Value item = list.Get(i);
    if (info.Env().IsExceptionPending()) return false;
    if (!item.IsNumber()) {
      ThrowType(info.Env(), "The \"fds\" argument must be an array of numbers");
      return false;
    }
    const double number = item.As<Napi::Number>().DoubleValue();
    if (!(number >= 0 && number <= INT32_MAX) || static_cast<double>(static_cast<int>(number)) != number) {
      ThrowRange(info.Env(), "The \"fds\" argument must hold integers >= 0");
      return false;
    }
    out->push_back(static_cast<int>(number));
  }
  return true;
}

}  // namespace opencode_pty
