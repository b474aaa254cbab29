// Run-time instruction-set detection for the native kernels: one binary (built for AVX2+FMA) picks its AVX-512
// paths at run time from cpuid and the OS's saved register state (xgetbv), so a build on one host runs on another.
//
//   ragen_isa::has_avx2()        AVX2 + FMA (the build's baseline; the addon refuses to load without it)
//   ragen_isa::has_avx512()      AVX-512 F + BW + DQ + VL, with the OS saving zmm state
//   ragen_isa::has_avx512bf16()  has_avx512() and AVX512_BF16 (vdpbf16ps: bf16 pairs dotted into f32)
//   ragen_isa::has_avx512vnni()  has_avx512() and AVX512_VNNI (vpdpbusd: int8 dot products)
//   ragen_isa::level()           the widest path the kernels dispatch to: AVX2 or AVX512, capped by
//                                ragen_isa::set_cap (tests force each path present; RAGEN_ISA=avx2 in the environment
//                                does the same for a whole process)
//
// Kernels compiled for AVX-512 carry RAGEN_TARGET_AVX512 (a GCC/Clang target attribute), so the rest of the file
// stays AVX2 and the compiler never emits an AVX-512 instruction outside a function that is called only after
// has_avx512() said yes.
#pragma once
#include <cpuid.h>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#define RAGEN_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,fma,avx2")))
#define RAGEN_TARGET_AVX512BF16 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,fma,avx2")))

namespace ragen_isa {

enum Level : int { NONE = 0, AVX2 = 1, AVX512 = 2 };

struct Features {
  bool avx2 = false, fma = false, avx512 = false, avx512bf16 = false, avx512vnni = false, amx_bf16 = false;
};

inline Features detect() {
  Features f;
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  bool osxsave = c & (1u << 27), avx = c & (1u << 28), fma = c & (1u << 12);
  if (!osxsave || !avx) return f;
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  uint64_t xcr0 = ((uint64_t)hi << 32) | lo;
  bool ymm = (xcr0 & 0x6) == 0x6, zmm = (xcr0 & 0xe6) == 0xe6;
  if (!ymm || __get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  f.fma = fma;
  f.avx2 = (b & (1u << 5)) && fma;
  bool f512 = b & (1u << 16), dq = b & (1u << 17), bw = b & (1u << 30), vl = b & (1u << 31);
  f.avx512 = f.avx2 && zmm && f512 && dq && bw && vl;
  f.avx512vnni = f.avx512 && (c & (1u << 11));
  bool amx_tile = d & (1u << 24);
  f.amx_bf16 = amx_tile && (d & (1u << 22)) && (xcr0 & 0x60000) == 0x60000;
  unsigned a1, b1, c1, d1;
  __cpuid_count(7, 1, a1, b1, c1, d1);
  f.avx512bf16 = f.avx512 && (a1 & (1u << 5));
  return f;
}

inline const Features& features() {
  static const Features f = detect();
  return f;
}

inline bool has_avx2() { return features().avx2; }
inline bool has_avx512() { return features().avx512; }
inline bool has_avx512bf16() { return features().avx512bf16; }
inline bool has_avx512vnni() { return features().avx512vnni; }

/** The widest level present. */
inline Level best() { return has_avx512() ? AVX512 : has_avx2() ? AVX2 : NONE; }

/** The level cap: RAGEN_ISA (avx2 | avx512) when set, else none; set_cap changes it. */
inline Level& cap_ref() {
  static Level cap = [] {
    const char* e = std::getenv("RAGEN_ISA");
    if (e && std::strcmp(e, "avx2") == 0) return AVX2;
    return AVX512;
  }();
  return cap;
}
inline void set_cap(Level l) { cap_ref() = l; }

/** The path the kernels take now: the widest present, at most the cap. */
inline Level level() {
  Level b = best();
  return b < cap_ref() ? b : cap_ref();
}

inline const char* name(Level l) { return l == AVX512 ? "avx512" : l == AVX2 ? "avx2" : "none"; }

}  // namespace ragen_isa
