// bf16 weights for the native backend: frozen matrices (a LoRA base, a reference model) stored as bfloat16 in native
// memory (memory.cc), multiplied by float32 activations into float32 outputs. One reference loop and three SIMD paths
// picked at run time from the instruction sets present (native/isa.h): AVX2+FMA (bf16 widened to f32 by a shift),
// AVX-512F (the same, 16 lanes), and AVX-512 BF16 (vdpbf16ps: the activations rounded to bf16 too, pairs dotted into
// f32) for the x W^T product. W x products of the backward have no bf16 dot form and take the AVX-512F path there.
#include "isa.h"
#include "memory.h"
#include "napi-args.h"
#include <immintrin.h>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

enum Path : int { AUTO = 0, SCALAR = 1, AVX2 = 2, AVX512 = 3, AVX512BF16 = 4 };
const char* const PATH_NAMES[] = {"auto", "scalar", "avx2", "avx512", "avx512bf16"};

bool present(int path) {
  switch (path) {
    case SCALAR: return true;
    case AVX2: return ragen_isa::has_avx2();
    case AVX512: return ragen_isa::level() >= ragen_isa::AVX512;
    case AVX512BF16: return ragen_isa::level() >= ragen_isa::AVX512 && ragen_isa::has_avx512bf16();
    default: return false;
  }
}

int best_path() {
  if (present(AVX512BF16)) return AVX512BF16;
  if (present(AVX512)) return AVX512;
  return present(AVX2) ? AVX2 : SCALAR;
}

inline float bf2f(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/** float -> bf16, round to nearest even (NaN stays NaN). */
inline uint16_t f2bf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

/** One product: y (M, N) (+)= x (M, K) op(W), W bf16 (N, K) when nt (x W^T), else (K, N); columns [n0, n1). */
struct Job {
  int M, N, K;
  const float* x;
  const uint16_t* w;
  float* y;
  bool acc, nt;
  const uint16_t* xb;  // x rounded to bf16, rows of Kp (the BF16 path only)
  int Kp;
};

inline void put(float* y, float v, bool acc) { *y = acc ? *y + v : v; }

// ---------- the reference ----------
void scalar(const Job& j, int n0, int n1) {
  for (int m = 0; m < j.M; m++)
    for (int n = n0; n < n1; n++) {
      float s = 0.f;
      for (int k = 0; k < j.K; k++)
        s += j.x[(size_t)m * j.K + k] * bf2f(j.nt ? j.w[(size_t)n * j.K + k] : j.w[(size_t)k * j.N + n]);
      put(j.y + (size_t)m * j.N + n, s, j.acc);
    }
}

// ---------- AVX2 + FMA ----------
__attribute__((target("avx2,fma"))) inline __m256 cvt8(const uint16_t* p) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16));
}

__attribute__((target("avx2,fma"))) inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_hadd_ps(s, s);
  s = _mm_hadd_ps(s, s);
  return _mm_cvtss_f32(s);
}

/** x W^T on rows [m, m + R) x columns [n, n + C) (R <= 4, C <= 2). */
template <int R, int C>
__attribute__((target("avx2,fma"))) void nt_tile8(const Job& j, int m, int n) {
  __m256 s[R][C];
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++) s[r][c] = _mm256_setzero_ps();
  const int K8 = j.K & ~7;
  for (int k = 0; k < K8; k += 8) {
    __m256 w[C];
    for (int c = 0; c < C; c++) w[c] = cvt8(j.w + (size_t)(n + c) * j.K + k);
    for (int r = 0; r < R; r++) {
      __m256 a = _mm256_loadu_ps(j.x + (size_t)(m + r) * j.K + k);
      for (int c = 0; c < C; c++) s[r][c] = _mm256_fmadd_ps(a, w[c], s[r][c]);
    }
  }
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++) {
      float v = hsum8(s[r][c]);
      for (int k = K8; k < j.K; k++) v += j.x[(size_t)(m + r) * j.K + k] * bf2f(j.w[(size_t)(n + c) * j.K + k]);
      put(j.y + (size_t)(m + r) * j.N + n + c, v, j.acc);
    }
}

template <int R>
__attribute__((target("avx2,fma"))) void nt_rows8(const Job& j, int m, int n0, int n1) {
  int n = n0;
  for (; n + 2 <= n1; n += 2) nt_tile8<R, 2>(j, m, n);
  if (n < n1) nt_tile8<R, 1>(j, m, n);
}

/** x W on rows [m, m + R), columns [n, n + 16). */
template <int R>
__attribute__((target("avx2,fma"))) void nn_tile8(const Job& j, int m, int n) {
  __m256 s[R][2];
  for (int r = 0; r < R; r++) s[r][0] = s[r][1] = _mm256_setzero_ps();
  for (int k = 0; k < j.K; k++) {
    const uint16_t* wk = j.w + (size_t)k * j.N + n;
    __m256 w0 = cvt8(wk), w1 = cvt8(wk + 8);
    for (int r = 0; r < R; r++) {
      __m256 a = _mm256_broadcast_ss(j.x + (size_t)(m + r) * j.K + k);
      s[r][0] = _mm256_fmadd_ps(a, w0, s[r][0]);
      s[r][1] = _mm256_fmadd_ps(a, w1, s[r][1]);
    }
  }
  for (int r = 0; r < R; r++) {
    float* y = j.y + (size_t)(m + r) * j.N + n;
    if (j.acc) {
      s[r][0] = _mm256_add_ps(s[r][0], _mm256_loadu_ps(y));
      s[r][1] = _mm256_add_ps(s[r][1], _mm256_loadu_ps(y + 8));
    }
    _mm256_storeu_ps(y, s[r][0]);
    _mm256_storeu_ps(y + 8, s[r][1]);
  }
}

/** A column range's remainder (fewer than a tile's columns) by the reference loop. */
void scalar_cols(const Job& j, int n0, int n1) { scalar(j, n0, n1); }

__attribute__((target("avx2,fma"))) void avx2(const Job& j, int n0, int n1) {
  if (j.nt) {
    int m = 0;
    for (; m + 4 <= j.M; m += 4) nt_rows8<4>(j, m, n0, n1);
    for (; m < j.M; m++) nt_rows8<1>(j, m, n0, n1);
    return;
  }
  int nEnd = n0 + ((n1 - n0) & ~15);
  for (int n = n0; n < nEnd; n += 16) {
    int m = 0;
    for (; m + 4 <= j.M; m += 4) nn_tile8<4>(j, m, n);
    for (; m < j.M; m++) nn_tile8<1>(j, m, n);
  }
  if (nEnd < n1) scalar_cols(j, nEnd, n1);
}

// ---------- AVX-512F ----------
RAGEN_TARGET_AVX512 inline __m512 cvt16(const uint16_t* p, __mmask16 mask) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mask, p)), 16));
}

template <int R, int C>
RAGEN_TARGET_AVX512 void nt_tile16(const Job& j, int m, int n) {
  __m512 s[R][C];
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++) s[r][c] = _mm512_setzero_ps();
  for (int k = 0; k < j.K; k += 16) {
    __mmask16 mask = j.K - k >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (j.K - k)) - 1);
    __m512 w[C];
    for (int c = 0; c < C; c++) w[c] = cvt16(j.w + (size_t)(n + c) * j.K + k, mask);
    for (int r = 0; r < R; r++) {
      __m512 a = _mm512_maskz_loadu_ps(mask, j.x + (size_t)(m + r) * j.K + k);
      for (int c = 0; c < C; c++) s[r][c] = _mm512_fmadd_ps(a, w[c], s[r][c]);
    }
  }
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++) put(j.y + (size_t)(m + r) * j.N + n + c, _mm512_reduce_add_ps(s[r][c]), j.acc);
}

template <int R>
RAGEN_TARGET_AVX512 void nt_rows16(const Job& j, int m, int n0, int n1) {
  int n = n0;
  for (; n + 4 <= n1; n += 4) nt_tile16<R, 4>(j, m, n);
  for (; n < n1; n++) nt_tile16<R, 1>(j, m, n);
}

/** x W on rows [m, m + R), columns [n, n + 32) of which `cols` are real. */
template <int R>
RAGEN_TARGET_AVX512 void nn_tile16(const Job& j, int m, int n, int cols) {
  __mmask16 m0 = cols >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << cols) - 1);
  __mmask16 m1 = cols >= 32 ? (__mmask16)0xffff : cols > 16 ? (__mmask16)((1u << (cols - 16)) - 1) : (__mmask16)0;
  __m512 s[R][2];
  for (int r = 0; r < R; r++) s[r][0] = s[r][1] = _mm512_setzero_ps();
  for (int k = 0; k < j.K; k++) {
    const uint16_t* wk = j.w + (size_t)k * j.N + n;
    __m512 w0 = cvt16(wk, m0), w1 = cvt16(wk + 16, m1);
    for (int r = 0; r < R; r++) {
      __m512 a = _mm512_set1_ps(j.x[(size_t)(m + r) * j.K + k]);
      s[r][0] = _mm512_fmadd_ps(a, w0, s[r][0]);
      s[r][1] = _mm512_fmadd_ps(a, w1, s[r][1]);
    }
  }
  for (int r = 0; r < R; r++) {
    float* y = j.y + (size_t)(m + r) * j.N + n;
    if (j.acc) {
      s[r][0] = _mm512_add_ps(s[r][0], _mm512_maskz_loadu_ps(m0, y));
      s[r][1] = _mm512_add_ps(s[r][1], _mm512_maskz_loadu_ps(m1, y + 16));
    }
    _mm512_mask_storeu_ps(y, m0, s[r][0]);
    _mm512_mask_storeu_ps(y + 16, m1, s[r][1]);
  }
}

RAGEN_TARGET_AVX512 void avx512(const Job& j, int n0, int n1) {
  if (j.nt) {
    int m = 0;
    for (; m + 4 <= j.M; m += 4) nt_rows16<4>(j, m, n0, n1);
    for (; m < j.M; m++) nt_rows16<1>(j, m, n0, n1);
    return;
  }
  for (int n = n0; n < n1; n += 32) {
    int cols = std::min(32, n1 - n), m = 0;
    for (; m + 4 <= j.M; m += 4) nn_tile16<4>(j, m, n, cols);
    for (; m < j.M; m++) nn_tile16<1>(j, m, n, cols);
  }
}

// ---------- AVX-512 BF16 (x W^T: vdpbf16ps over pairs of k) ----------
template <int R, int C>
RAGEN_TARGET_AVX512BF16 void dp_tile(const Job& j, int m, int n) {
  __m512 s[R][C];
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++) s[r][c] = _mm512_setzero_ps();
  for (int k = 0; k < j.K; k += 32) {
    __mmask32 mask = j.K - k >= 32 ? (__mmask32)0xffffffffu : (__mmask32)((1u << (j.K - k)) - 1);
    __m512i w[C];
    for (int c = 0; c < C; c++) w[c] = _mm512_maskz_loadu_epi16(mask, j.w + (size_t)(n + c) * j.K + k);
    for (int r = 0; r < R; r++) {
      __m512i a = _mm512_loadu_si512(j.xb + (size_t)(m + r) * j.Kp + k);  // zero-padded to Kp
      for (int c = 0; c < C; c++) s[r][c] = _mm512_dpbf16_ps(s[r][c], (__m512bh)a, (__m512bh)w[c]);
    }
  }
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++) put(j.y + (size_t)(m + r) * j.N + n + c, _mm512_reduce_add_ps(s[r][c]), j.acc);
}

template <int R>
RAGEN_TARGET_AVX512BF16 void dp_rows(const Job& j, int m, int n0, int n1) {
  int n = n0;
  for (; n + 4 <= n1; n += 4) dp_tile<R, 4>(j, m, n);
  for (; n < n1; n++) dp_tile<R, 1>(j, m, n);
}

RAGEN_TARGET_AVX512BF16 void avx512bf16(const Job& j, int n0, int n1) {
  if (!j.nt) return avx512(j, n0, n1);
  int m = 0;
  for (; m + 4 <= j.M; m += 4) dp_rows<4>(j, m, n0, n1);
  for (; m < j.M; m++) dp_rows<1>(j, m, n0, n1);
}

int thread_count() {
  static const int n = [] {
    const char* e = std::getenv("RAGEN_THREADS");
    int t = e ? std::atoi(e) : 0;
    if (t <= 0) t = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    return std::min(t, 64);
  }();
  return n;
}

/** Run `path` over the columns of `j`, split across threads when the product is large enough to pay for them. */
void run(const Job& j, int path) {
  auto work = [&](int n0, int n1) {
    switch (path) {
      case AVX2: avx2(j, n0, n1); break;
      case AVX512: avx512(j, n0, n1); break;
      case AVX512BF16: avx512bf16(j, n0, n1); break;
      default: scalar(j, n0, n1);
    }
  };
  double macs = (double)j.M * j.N * j.K;
  int threads = macs < (1 << 21) ? 1 : std::min(thread_count(), std::max(1, j.N / 32));
  if (threads <= 1) return work(0, j.N);
  std::vector<std::thread> pool;
  int per = ((j.N + threads - 1) / threads + 31) & ~31;  // whole 32-column tiles per thread
  for (int t = 1; t < threads && t * per < j.N; t++) pool.emplace_back(work, t * per, std::min(j.N, (t + 1) * per));
  work(0, std::min(j.N, per));
  for (auto& th : pool) th.join();
}

using namespace ragen_args;

/**
 * gemmBf16(path, nt, M, N, K, arena, xOff, wAddr, wOff, yOff, accumulate): y (M, N) (+)= x (M, K) op(W) with x and y
 * float32 at byte offsets of the arena (a typed array over it, or the address of the native block that holds it), W bf16 at byte offset wOff of the native block wAddr, (N, K) when nt
 * (x W^T) else (K, N). path: 0 the best present, 1 scalar, 2 avx2, 3 avx512, 4 avx512bf16.
 */
napi_value GemmBf16(napi_env env, napi_callback_info info) {
  const char* name = "gemmBf16";
  napi_value argv[11];
  if (!get(env, info, name, 11, argv)) return nullptr;
  double a[11];
  void* arena = nullptr;
  size_t arenaBytes = 0;
  for (size_t i = 0; i < 11; i++) {
    napi_valuetype kind = napi_undefined;
    if (i == 5 && napi_typeof(env, argv[i], &kind) == napi_ok && kind == napi_number) {
      double addr;
      napi_get_value_double(env, argv[i], &addr);
      arenaBytes = ragen_native_block_bytes(addr);
      arena = ragen_native_range(addr, 0, 0);
      if (!arena) {
        fail(env, true, "ragen native gemmBf16: the arena %.0f is not a live native block", addr);
        return nullptr;
      }
    } else if (i == 5) {
      if (!bytes(env, argv[i], name, i, &arena, &arenaBytes)) return nullptr;
    } else if (!number(env, argv[i], name, i, &a[i])) {
      return nullptr;
    }
  }
  int path = static_cast<int>(a[0]), M = static_cast<int>(a[2]), N = static_cast<int>(a[3]), K = static_cast<int>(a[4]);
  bool nt = a[1] != 0;
  if (path < 0 || path > AVX512BF16 || (path != AUTO && !present(path))) {
    fail(env, true, "ragen native gemmBf16: path %d (%s) is not available on this CPU; bf16Paths() lists those present", path, path >= 0 && path <= AVX512BF16 ? PATH_NAMES[path] : "unknown");
    return nullptr;
  }
  if (path == AUTO) path = best_path();
  if (M < 0 || N < 0 || K < 0) {
    fail(env, true, "ragen native gemmBf16: negative size M %d N %d K %d", M, N, K);
    return nullptr;
  }
  double xb = (double)M * K * 4, yb = (double)M * N * 4;
  if (!(a[6] >= 0 && a[6] + xb <= arenaBytes && a[9] >= 0 && a[9] + yb <= arenaBytes)) {
    fail(env, true, "ragen native gemmBf16: x or y lies outside the arena (%zu bytes)", arenaBytes);
    return nullptr;
  }
  const void* w = ragen_native_range(a[7], a[8], (double)N * K * 2);
  if (!w) {
    fail(env, true, "ragen native gemmBf16: the %d x %d bf16 weight at offset %.0f is outside the native block %.0f", nt ? N : K, nt ? K : N, a[8], a[7]);
    return nullptr;
  }
  uint8_t* base = static_cast<uint8_t*>(arena);
  Job j{M, N, K, reinterpret_cast<const float*>(base + (size_t)a[6]), static_cast<const uint16_t*>(w),
        reinterpret_cast<float*>(base + (size_t)a[9]), a[10] != 0, nt, nullptr, 0};
  std::vector<uint16_t> xbf;
  if (path == AVX512BF16 && nt) {
    j.Kp = (K + 31) & ~31;
    xbf.assign((size_t)M * j.Kp, 0);
    for (int m = 0; m < M; m++)
      for (int k = 0; k < K; k++) xbf[(size_t)m * j.Kp + k] = f2bf(j.x[(size_t)m * K + k]);
    j.xb = xbf.data();
  }
  run(j, path);
  return nullptr;
}

/** bf16Store(addr, byteOffset, f32): write the float32 array as bf16 (round to nearest even) into the block. */
napi_value Store(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  double addr, off;
  void* data;
  size_t len = 0;
  if (!get(env, info, "bf16Store", 3, argv) || !number(env, argv[0], "bf16Store", 0, &addr) ||
      !number(env, argv[1], "bf16Store", 1, &off) || !bytes(env, argv[2], "bf16Store", 2, &data, &len))
    return nullptr;
  size_t n = len / 4;
  auto* dst = static_cast<uint16_t*>(ragen_native_range(addr, off, (double)n * 2));
  if (!dst) {
    fail(env, true, "ragen native bf16Store: %zu values at offset %.0f are outside the block at %.0f", n, off, addr);
    return nullptr;
  }
  const float* src = static_cast<const float*>(data);
  for (size_t i = 0; i < n; i++) dst[i] = f2bf(src[i]);
  return nullptr;
}

/** bf16Load(addr, byteOffset, f32): read bf16 values of the block into the float32 array (exact). */
napi_value Load(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  double addr, off;
  void* data;
  size_t len = 0;
  if (!get(env, info, "bf16Load", 3, argv) || !number(env, argv[0], "bf16Load", 0, &addr) ||
      !number(env, argv[1], "bf16Load", 1, &off) || !bytes(env, argv[2], "bf16Load", 2, &data, &len))
    return nullptr;
  size_t n = len / 4;
  auto* src = static_cast<const uint16_t*>(ragen_native_range(addr, off, (double)n * 2));
  if (!src) {
    fail(env, true, "ragen native bf16Load: %zu values at offset %.0f are outside the block at %.0f", n, off, addr);
    return nullptr;
  }
  float* dst = static_cast<float*>(data);
  for (size_t i = 0; i < n; i++) dst[i] = bf2f(src[i]);
  return nullptr;
}

/** bf16Paths(): the paths present, best last, e.g. "scalar avx2 avx512 avx512bf16". */
napi_value Paths(napi_env env, napi_callback_info info) {
  napi_value argv[1] = {};
  if (!get(env, info, "bf16Paths", 0, argv)) return nullptr;
  std::string s;
  for (int p = SCALAR; p <= AVX512BF16; p++)
    if (present(p)) s += (s.empty() ? "" : " ") + std::string(PATH_NAMES[p]);
  napi_value out;
  napi_create_string_utf8(env, s.c_str(), NAPI_AUTO_LENGTH, &out);
  return out;
}

}  // namespace

napi_value ragen_register_bf16(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
    {"gemmBf16", nullptr, GemmBf16, nullptr, nullptr, nullptr, napi_default, nullptr},
    {"bf16Store", nullptr, Store, nullptr, nullptr, nullptr, napi_default, nullptr},
    {"bf16Load", nullptr, Load, nullptr, nullptr, nullptr, napi_default, nullptr},
    {"bf16Paths", nullptr, Paths, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  return define(env, exports, props, sizeof(props) / sizeof(props[0]));
}
