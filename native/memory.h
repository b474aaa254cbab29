// Native memory blocks (memory.cc) and the registration hooks of the files outside ragen.cc.
#pragma once
#include <node_api.h>
#include <cstddef>
#include <cstdint>

/** The address `byteOffset` into the live block at `addr` when `bytes` from there lie inside it, else nullptr. */
void* ragen_native_range(double addr, double byteOffset, double bytes);

/** The bytes of the live block starting at `addr`, or 0 when none starts there. */
size_t ragen_native_block_bytes(double addr);

/** Add nativeAlloc / nativeReserve / nativeFree / nativeCopy / nativeAllocated to the addon's exports. */
napi_value ragen_register_memory(napi_env env, napi_value exports);
/** Add the bf16 functions (bf16.cc) to the addon's exports. */
napi_value ragen_register_bf16(napi_env env, napi_value exports);
