// Argument checks shared by the native files outside ragen.cc (memory.cc, bf16.cc): each function checks its argument
// count and types and throws a TypeError (or RangeError) naming itself, so a wrong call is an exception, never a crash.
#pragma once
#include <node_api.h>
#include <cstdarg>
#include <cstddef>
#include <cstdio>

namespace ragen_args {

constexpr size_t MAX_ARGS = 16;

/** Throw a TypeError (or RangeError when range) with a printf message unless an exception is already pending. */
inline bool fail(napi_env env, bool range, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
inline bool fail(napi_env env, bool range, const char* fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  bool pending = false;
  if (napi_is_exception_pending(env, &pending) == napi_ok && !pending) {
    if (range) napi_throw_range_error(env, nullptr, msg);
    else napi_throw_type_error(env, nullptr, msg);
  }
  return false;
}

/** The call's n arguments into argv; false (TypeError thrown) when the count differs. */
inline bool get(napi_env env, napi_callback_info info, const char* name, size_t n, napi_value* argv) {
  size_t argc = MAX_ARGS;
  napi_value all[MAX_ARGS] = {};
  if (napi_get_cb_info(env, info, &argc, all, nullptr, nullptr) != napi_ok) return fail(env, false, "ragen native %s: napi_get_cb_info failed", name);
  if (argc != n) return fail(env, false, "ragen native %s: expected %zu arguments, got %zu", name, n, argc);
  for (size_t i = 0; i < n; i++) argv[i] = all[i];
  return true;
}

/** argv[i] as a number. */
inline bool number(napi_env env, napi_value v, const char* name, size_t i, double* out) {
  if (napi_get_value_double(env, v, out) != napi_ok) return fail(env, false, "ragen native %s: argument %zu must be a number", name, i);
  return true;
}

/** argv[i] as a typed array: its data and byte length. */
inline bool bytes(napi_env env, napi_value v, const char* name, size_t i, void** data, size_t* byteLength) {
  bool is_typed = false;
  napi_typedarray_type type;
  size_t length = 0, offset = 0;
  napi_value ab;
  if (napi_is_typedarray(env, v, &is_typed) != napi_ok || !is_typed ||
      napi_get_typedarray_info(env, v, &type, &length, data, &ab, &offset) != napi_ok)
    return fail(env, false, "ragen native %s: argument %zu must be a typed array", name, i);
  size_t elem = 1;
  switch (type) {
    case napi_int16_array: case napi_uint16_array: elem = 2; break;
    case napi_int32_array: case napi_uint32_array: case napi_float32_array: elem = 4; break;
    case napi_float64_array: case napi_bigint64_array: case napi_biguint64_array: elem = 8; break;
    default: elem = 1;
  }
  *byteLength = length * elem;
  return true;
}

/** Define `props` on exports. */
inline napi_value define(napi_env env, napi_value exports, const napi_property_descriptor* props, size_t n) {
  if (napi_define_properties(env, exports, n, props) != napi_ok) napi_throw_error(env, nullptr, "ragen native: napi_define_properties failed");
  return exports;
}

}  // namespace ragen_args
