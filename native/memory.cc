// Native memory for the native backend: its tensor arena (one reserved block, not bound by WebAssembly's 4 GiB) and
// bf16 weights, mapped lazily (pages cost RAM only once written) and named by their address. Every block is
// registered, so a kernel given an address checks it against a live block and its size instead of reading whatever
// lies there.
#include "memory.h"
#include "napi-args.h"
#include <sys/mman.h>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

namespace {
std::mutex g_lock;
struct Block {
  size_t bytes;
  bool reserved;  // an arena's address space (nativeReserve): not counted by nativeAllocated
};
std::map<uintptr_t, Block> g_blocks;  // address -> block
size_t g_total = 0;
}  // namespace

void* ragen_native_range(double addr, double byteOffset, double bytes) {
  if (!(addr >= 0 && byteOffset >= 0 && bytes >= 0)) return nullptr;
  uintptr_t a = static_cast<uintptr_t>(addr);
  size_t off = static_cast<size_t>(byteOffset), n = static_cast<size_t>(bytes);
  std::lock_guard<std::mutex> hold(g_lock);
  auto it = g_blocks.find(a);
  if (it == g_blocks.end() || off > it->second.bytes || n > it->second.bytes - off) return nullptr;
  return reinterpret_cast<uint8_t*>(a) + off;
}

size_t ragen_native_block_bytes(double addr) {
  if (!(addr > 0)) return 0;
  std::lock_guard<std::mutex> hold(g_lock);
  auto it = g_blocks.find(static_cast<uintptr_t>(addr));
  return it == g_blocks.end() ? 0 : it->second.bytes;
}

namespace {
using namespace ragen_args;

/** A new block of `bytes` (zeroed pages, mapped lazily) registered as `reserved` or not; nullptr after a RangeError. */
void* map_block(napi_env env, const char* name, napi_value arg, bool reserved) {
  double bytes;
  if (!number(env, arg, name, 0, &bytes)) return nullptr;
  if (!(bytes >= 1 && bytes <= 9007199254740991.0 && bytes == static_cast<double>(static_cast<size_t>(bytes)))) {
    fail(env, true, "ragen native %s: size %.0f bytes is not a positive integer", name, bytes);
    return nullptr;
  }
  size_t n = static_cast<size_t>(bytes);
  // MAP_NORESERVE: the block is address space until written, so a large frozen model or an arena's reservation costs
  // what it holds
  void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    fail(env, true, "ragen native %s: cannot map %.2f GiB (%s); free tensors or use a smaller model", name, bytes / 1073741824.0, strerror(errno));
    return nullptr;
  }
  std::lock_guard<std::mutex> hold(g_lock);
  g_blocks[reinterpret_cast<uintptr_t>(p)] = Block{n, reserved};
  if (!reserved) g_total += n;
  return p;
}

napi_value address_of(napi_env env, void* p) {
  if (!p) return nullptr;
  napi_value out;
  napi_create_double(env, static_cast<double>(reinterpret_cast<uintptr_t>(p)), &out);
  return out;
}

/** nativeAlloc(bytes): the address of a new zeroed block (a RangeError naming the size when the OS refuses). */
napi_value Alloc(napi_env env, napi_callback_info info) {
  napi_value argv[1] = {};
  if (!get(env, info, "nativeAlloc", 1, argv)) return nullptr;
  return address_of(env, map_block(env, "nativeAlloc", argv[0], false));
}

/**
 * nativeReserve(bytes): as nativeAlloc, for an arena's address space: pages cost RAM once written, and nativeAllocated
 * leaves the block out.
 */
napi_value Reserve(napi_env env, napi_callback_info info) {
  napi_value argv[1] = {};
  if (!get(env, info, "nativeReserve", 1, argv)) return nullptr;
  return address_of(env, map_block(env, "nativeReserve", argv[0], true));
}

/** nativeFree(address): unmap a block from nativeAlloc. */
napi_value Free(napi_env env, napi_callback_info info) {
  napi_value argv[1] = {};
  double addr;
  if (!get(env, info, "nativeFree", 1, argv) || !number(env, argv[0], "nativeFree", 0, &addr)) return nullptr;
  size_t n = 0;
  {
    std::lock_guard<std::mutex> hold(g_lock);
    auto it = g_blocks.find(static_cast<uintptr_t>(addr));
    if (addr < 0 || it == g_blocks.end()) {
      fail(env, true, "ragen native nativeFree: %.0f is not a live block (freed twice?)", addr);
      return nullptr;
    }
    n = it->second.bytes;
    if (!it->second.reserved) g_total -= n;
    g_blocks.erase(it);
  }
  munmap(reinterpret_cast<void*>(static_cast<uintptr_t>(addr)), n);
  return nullptr;
}

/** nativeCopy(address, byteOffset, typedArray, toNative): copy the array's bytes into the block, or out of it. */
napi_value Copy(napi_env env, napi_callback_info info) {
  napi_value argv[4];
  double addr, off, dir;
  void* data;
  size_t len = 0;
  if (!get(env, info, "nativeCopy", 4, argv) || !number(env, argv[0], "nativeCopy", 0, &addr) ||
      !number(env, argv[1], "nativeCopy", 1, &off) || !bytes(env, argv[2], "nativeCopy", 2, &data, &len) ||
      !number(env, argv[3], "nativeCopy", 3, &dir))
    return nullptr;
  void* p = ragen_native_range(addr, off, static_cast<double>(len));
  if (!p) {
    fail(env, true, "ragen native nativeCopy: %zu bytes at offset %.0f are outside the block at %.0f", len, off, addr);
    return nullptr;
  }
  if (dir != 0) std::memcpy(p, data, len);
  else std::memcpy(data, p, len);
  return nullptr;
}

/** nativeAllocated(): bytes in live blocks (not reservations). */
napi_value Allocated(napi_env env, napi_callback_info info) {
  napi_value argv[1] = {};
  if (!get(env, info, "nativeAllocated", 0, argv)) return nullptr;
  std::lock_guard<std::mutex> hold(g_lock);
  napi_value out;
  napi_create_double(env, static_cast<double>(g_total), &out);
  return out;
}
}  // namespace

napi_value ragen_register_memory(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
    {"nativeAlloc", nullptr, Alloc, nullptr, nullptr, nullptr, napi_default, nullptr},
    {"nativeReserve", nullptr, Reserve, nullptr, nullptr, nullptr, napi_default, nullptr},
    {"nativeFree", nullptr, Free, nullptr, nullptr, nullptr, napi_default, nullptr},
    {"nativeCopy", nullptr, Copy, nullptr, nullptr, nullptr, napi_default, nullptr},
    {"nativeAllocated", nullptr, Allocated, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  return define(env, exports, props, sizeof(props) / sizeof(props[0]));
}
