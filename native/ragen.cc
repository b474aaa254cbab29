// ragen-ts native kernels (N-API): gemm through our own packed micro-kernels (native/gemm.cc), dispatched at run time
// to AVX-512 or AVX2/FMA (native/isa.h), on 2 threads, also inside causal attention with grouped KV heads.
// Every pointer argument is a byte offset into the memory setMemory named: the native backend's arena (a native block,
// past 4 GiB) or a Float32Array (a WebAssembly memory's view, as the tests of a bare addon use).
#include <node_api.h>
#include "memory.h"
#include <immintrin.h>
#include "attention.h"
#include "gemm.h"
#include "nn.h"
#include "ops.h"
#include "isa.h"
#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

static uint8_t* g_base = nullptr;
static size_t g_size = 0;
static inline float* F(double off) { return reinterpret_cast<float*>(g_base + static_cast<size_t>(off)); }
static inline int32_t* I(double off) { return reinterpret_cast<int32_t*>(g_base + static_cast<size_t>(off)); }

static inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_hadd_ps(s, s);
  s = _mm_hadd_ps(s, s);
  return _mm_cvtss_f32(s);
}

// ---------- decode.inc's packed weight panels: 16 columns, A in blocks of 6 rows (ragen_gemm::panels16) ----------
namespace tile {
constexpr int MR = 6, NR = 16;
}  // namespace tile


// Our own kernels on every host (OpenBLAS 0.3.21 runs its SSE3 "Prescott" kernels on CPUs newer than it, at a
// quarter of the AVX-512 path's rate on Sapphire Rapids).
static void gemm_any(bool tA, bool tB, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, bool accumulate, float* C, int ldc) {
  ragen_gemm::sgemm(tA, tB, M, N, K, alpha, A, lda, B, ldb, accumulate, C, ldc);
}

// ---------- a persistent helper thread with work stealing ----------
// run(mine, theirs): the helper runs `theirs` while this thread runs `mine`; if the helper has not picked
// `theirs` up by then (a busy machine), this thread runs it too, so a descheduled helper never costs a wait.
class Helper {
 public:
  Helper() : th_([this] { loop(); }) { th_.detach(); }
  void run(const std::function<void()>& mine, const std::function<void()>& theirs) {
    {
      std::lock_guard<std::mutex> g(m_);
      job_ = &theirs;
      state_ = 1;
    }
    cv_.notify_one();
    mine();
    int expected = 1;
    if (state_.compare_exchange_strong(expected, 0)) {
      theirs();
      return;
    }
    std::unique_lock<std::mutex> l(m_);
    done_.wait(l, [&] { return state_.load() == 3; });
    state_ = 0;
  }

 private:
  void loop() {
    for (;;) {
      std::unique_lock<std::mutex> l(m_);
      cv_.wait(l, [&] { return state_.load() == 1; });
      int expected = 1;
      if (!state_.compare_exchange_strong(expected, 2)) continue;
      const std::function<void()>* job = job_;
      l.unlock();
      (*job)();
      l.lock();
      state_ = 3;
      l.unlock();
      done_.notify_one();
    }
  }
  std::mutex m_;
  std::condition_variable cv_, done_;
  const std::function<void()>* job_ = nullptr;
  std::atomic<int> state_{0};  // 0 idle, 1 posted, 2 taken by the helper, 3 helper done
  std::thread th_;
};

static Helper& helper() {
  static Helper* h = new Helper();  // never destroyed: the thread is detached
  return *h;
}

/** C (M x N) = alpha A B^T (+ C), A (M x K), B (N x K): dot products, no packing (few rows: decoding). */
static void gemm_nt_small(int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, bool accumulate, float* C, int ldc) {
  auto finish = [&](float s, int i, int j) {
    float* c = C + (size_t)i * ldc + j;
    *c = accumulate ? *c + alpha * s : alpha * s;
  };
  auto dot1 = [&](const float* x, const float* y) {
    __m256 acc = _mm256_setzero_ps();
    int k = 0;
    for (; k + 8 <= K; k += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(x + k), _mm256_loadu_ps(y + k), acc);
    float s = hsum8(acc);
    for (; k < K; k++) s += x[k] * y[k];
    return s;
  };
  int M2 = M & ~1, j = 0;
  for (; j + 4 <= N; j += 4) {
    const float* b0 = B + (size_t)j * ldb;
    for (int i = 0; i < M2; i += 2) {
      const float* a0 = A + (size_t)i * lda;
      const float* a1 = a0 + lda;
      __m256 s[2][4];
      for (int r = 0; r < 2; r++)
        for (int q = 0; q < 4; q++) s[r][q] = _mm256_setzero_ps();
      int k = 0;
      for (; k + 8 <= K; k += 8) {
        __m256 x0 = _mm256_loadu_ps(a0 + k), x1 = _mm256_loadu_ps(a1 + k);
        for (int q = 0; q < 4; q++) {
          __m256 y = _mm256_loadu_ps(b0 + (size_t)q * ldb + k);
          s[0][q] = _mm256_fmadd_ps(x0, y, s[0][q]);
          s[1][q] = _mm256_fmadd_ps(x1, y, s[1][q]);
        }
      }
      for (int r = 0; r < 2; r++)
        for (int q = 0; q < 4; q++) {
          float v = hsum8(s[r][q]);
          const float* x = r ? a1 : a0;
          const float* y = b0 + (size_t)q * ldb;
          for (int kk = k; kk < K; kk++) v += x[kk] * y[kk];
          finish(v, i + r, j + q);
        }
    }
    for (int i = M2; i < M; i++)
      for (int q = 0; q < 4; q++) finish(dot1(A + (size_t)i * lda, b0 + (size_t)q * ldb), i, j + q);
  }
  for (; j < N; j++)
    for (int i = 0; i < M; i++) finish(dot1(A + (size_t)i * lda, B + (size_t)j * ldb), i, j);
}

/** gemm_any on two threads (rows or columns split) when it is big enough to pay for a thread start. */
static void gemm_par(bool tA, bool tB, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, bool accumulate, float* C, int ldc) {
  if (tB && !tA && M <= 96) {
    if ((double)M * N * K < (double)(1 << 24) || N < 64) {
      gemm_nt_small(M, N, K, alpha, A, lda, B, ldb, accumulate, C, ldc);
    } else {
      int h = ((N / 2) + 3) & ~3;
      helper().run([=] { gemm_nt_small(M, h, K, alpha, A, lda, B, ldb, accumulate, C, ldc); },
                   [=] { gemm_nt_small(M, N - h, K, alpha, A, lda, B + (size_t)h * ldb, ldb, accumulate, C + h, ldc); });
    }
    return;
  }
  if ((double)M * N * K < (double)(1 << 24) || (M < 16 && N < 32)) {
    gemm_any(tA, tB, M, N, K, alpha, A, lda, B, ldb, accumulate, C, ldc);
    return;
  }
  if (M >= N) {
    int h = ((M / 2) + 7) & ~7;
    helper().run([=] { gemm_any(tA, tB, h, N, K, alpha, A, lda, B, ldb, accumulate, C, ldc); },
                 [=] { gemm_any(tA, tB, M - h, N, K, alpha, tA ? A + h : A + (size_t)h * lda, lda, B, ldb, accumulate, C + (size_t)h * ldc, ldc); });
  } else {
    int h = ((N / 2) + 15) & ~15;
    helper().run([=] { gemm_any(tA, tB, M, h, K, alpha, A, lda, B, ldb, accumulate, C, ldc); },
                 [=] { gemm_any(tA, tB, M, N - h, K, alpha, A, lda, tB ? B + (size_t)h * ldb : B + h, ldb, accumulate, C + h, ldc); });
  }
}

// ---------- vectorised exp (Cephes-style, as assembly/simd.ts) ----------
static inline __m256 exp8(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.3762626647949f));
  __m256 fx = _mm256_floor_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), _mm256_set1_ps(0.5f)));
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), x);
  __m256 y = _mm256_set1_ps(1.9875691500e-4f);
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.3981999507e-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(8.3334519073e-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(4.1665795894e-2f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.6666665459e-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(5.0000001201e-1f));
  y = _mm256_fmadd_ps(y, _mm256_mul_ps(x, x), _mm256_add_ps(x, _mm256_set1_ps(1.f)));
  __m256i n = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(fx), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(y, _mm256_castsi256_ps(n));
}

static inline float dot(const float* x, const float* y, int n) {
  __m256 acc = _mm256_setzero_ps();
  int i = 0;
  for (; i + 8 <= n; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), acc);
  float d = hsum8(acc);
  for (; i < n; i++) d += x[i] * y[i];
  return d;
}

/** Row softmax over the first lim entries (masked keys set to 0), zeros after. */
static void masked_softmax_row(float* row, int S, int lim, const int32_t* valid) {
  float mx = -INFINITY;
  for (int s = 0; s < lim; s++) {
    if (valid && !valid[s]) row[s] = -INFINITY;
    mx = std::max(mx, row[s]);
  }
  if (mx == -INFINITY) {
    std::memset(row, 0, sizeof(float) * S);
    return;
  }
  __m256 mv = _mm256_set1_ps(mx), acc = _mm256_setzero_ps();
  int s = 0;
  for (; s + 8 <= lim; s += 8) {
    __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(row + s), mv));
    _mm256_storeu_ps(row + s, e);
    acc = _mm256_add_ps(acc, e);
  }
  float sum = hsum8(acc);
  for (; s < lim; s++) {
    alignas(32) float t[8];
    _mm256_store_ps(t, exp8(_mm256_set1_ps(row[s] - mx)));
    row[s] = t[0];
    sum += t[0];
  }
  float inv = 1.f / sum;
  for (s = 0; s < lim; s++) row[s] = (valid && !valid[s]) ? 0.f : row[s] * inv;
  for (s = lim; s < S; s++) row[s] = 0.f;
}

/** Run work(p0, p1) over [0, n): split across this thread and one more when macs is large. */
template <typename Fn>
static void split2(int n, double macs, Fn&& work) {  // work(p0, p1) over [0, n), on 2 threads when big
  if (n < 2 || macs < (1 << 20)) {
    work(0, n);
    return;
  }
  int h = n / 2;
  helper().run([&] { work(0, h); }, [&] { work(h, n); });
}

// ---------- N-API plumbing ----------
// Every call is checked at the boundary: a wrong argument count or type throws a TypeError naming the function (not
// a read of garbage), as does any failed napi_* call, and no kernel runs before setMemory.
constexpr size_t MAX_ARGS = 32;

/** Throws `fmt` (printf-style) as a JS TypeError; returns false so callers can `return fail(...)`. */
static bool fail(napi_env env, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail(napi_env env, const char* fmt, ...) {
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  bool pending = false;
  if (napi_is_exception_pending(env, &pending) == napi_ok && !pending) napi_throw_type_error(env, nullptr, msg);
  return false;
}

/** The call's arguments into argv, exactly n of them. */
static bool get_args(napi_env env, napi_callback_info info, const char* name, size_t n, napi_value* argv) {
  size_t argc = MAX_ARGS;
  napi_value all[MAX_ARGS];
  if (napi_get_cb_info(env, info, &argc, all, nullptr, nullptr) != napi_ok) return fail(env, "ragen native %s: napi_get_cb_info failed", name);
  if (argc != n) return fail(env, "ragen native %s: expected %zu arguments, got %zu", name, n, argc);
  for (size_t i = 0; i < n; i++) argv[i] = all[i];
  return true;
}

/** Exactly n number arguments into a[], with the arena set. */
static bool read_args(napi_env env, napi_callback_info info, const char* name, size_t n, double* a) {
  napi_value argv[MAX_ARGS];
  if (!get_args(env, info, name, n, argv)) return false;
  for (size_t i = 0; i < n; i++)  // napi_number_expected for anything but a number
    if (napi_get_value_double(env, argv[i], &a[i]) != napi_ok) return fail(env, "ragen native %s: argument %zu must be a number", name, i);
  if (g_base == nullptr) return fail(env, "ragen native %s: setMemory has not been called", name);
  return true;
}

#define ARGS(name, n)                                     \
  static_assert((n) <= MAX_ARGS, "too many arguments");   \
  double a[n];                                            \
  if (!read_args(env, info, name, n, a)) return nullptr;

// setMemory(view | address): the memory every pointer argument is an offset into, a Float32Array or the address of a
// native block (nativeReserve / nativeAlloc)
static napi_value SetMemory(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  if (!get_args(env, info, "setMemory", 1, argv)) return nullptr;
  napi_valuetype kind;
  if (napi_typeof(env, argv[0], &kind) == napi_ok && kind == napi_number) {
    double addr;
    napi_get_value_double(env, argv[0], &addr);
    const size_t bytes = ragen_native_block_bytes(addr);
    if (bytes == 0) {
      fail(env, "ragen native setMemory: %.0f is not the address of a live native block", addr);
      return nullptr;
    }
    g_base = reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(addr));
    g_size = bytes;
    return nullptr;
  }
  napi_typedarray_type type;
  size_t length;
  void* data;
  napi_value ab;
  size_t offset;
  bool is_typed = false;
  if (napi_is_typedarray(env, argv[0], &is_typed) != napi_ok || !is_typed ||
      napi_get_typedarray_info(env, argv[0], &type, &length, &data, &ab, &offset) != napi_ok || type != napi_float32_array || data == nullptr) {
    fail(env, "ragen native setMemory: expected a Float32Array over the arena or a native block's address");
    return nullptr;
  }
  g_base = static_cast<uint8_t*>(data);
  g_size = length * 4;
  return nullptr;
}

static napi_value Info(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  if (!get_args(env, info, "info", 0, argv)) return nullptr;
  napi_value s;
  const char* text = ragen_isa::level() >= ragen_isa::AVX512 ? "own gemm, avx512 8x32 micro-kernel (run-time dispatch); 2 threads"
                                                              : "own gemm, avx2/fma 6x16 micro-kernel (run-time dispatch); 2 threads";
  if (napi_create_string_utf8(env, text, NAPI_AUTO_LENGTH, &s) != napi_ok) {
    fail(env, "ragen native info: napi_create_string_utf8 failed");
    return nullptr;
  }
  return s;
}

// gemm(tA, tB, M, N, K, a, lda, b, ldb, c, ldc, alpha, accumulate, batch, strideA, strideB, strideC)
static napi_value Gemm(napi_env env, napi_callback_info info) {
  ARGS("gemm", 17);
  bool tA = a[0] != 0, tB = a[1] != 0, acc = a[12] != 0;
  int M = (int)a[2], N = (int)a[3], K = (int)a[4], batch = (int)a[13];
  size_t sA = (size_t)a[14], sB = (size_t)a[15], sC = (size_t)a[16];
  float* A = F(a[5]); float* B = F(a[7]); float* C = F(a[9]);
  for (int t = 0; t < batch; t++)
    gemm_par(tA, tB, M, N, K, (float)a[11], A + t * sA, (int)a[6], B + t * sB, (int)a[8], acc || (sC == 0 && t > 0), C + t * sC, (int)a[10]);
  return nullptr;
}

// attention(q, k, v, out, probs, B, Hq, Hkv, T, S, D, offset, scale, keyValid)
static napi_value Attention(napi_env env, napi_callback_info info) {
  ARGS("attention", 14);
  int B = (int)a[5], Hq = (int)a[6], Hkv = (int)a[7], T = (int)a[8], S = (int)a[9], D = (int)a[10], offset = (int)a[11];
  float scale = (float)a[12];
  const int32_t* kvalid = a[13] != 0 ? I(a[13]) : nullptr;
  int grp = Hq / Hkv, R = grp * T;
  if (T <= 4) {  // decoding: few query rows, plain dot products beat gemm calls
    split2(B * Hkv, (double)B * Hq * T * S * D / 4, [&](int p0, int p1) {
    for (int p = p0; p < p1; p++) {
      int b = p / Hkv, kv = p % Hkv;
      const float* K = F(a[1]) + (size_t)(b * Hkv + kv) * S * D;
      const float* Vv = F(a[2]) + (size_t)(b * Hkv + kv) * S * D;
      for (int r = 0; r < R; r++) {
        size_t row = (size_t)(b * Hq + kv * grp) * T + r;
        const float* q = F(a[0]) + row * D;
        float* o = F(a[3]) + row * D;
        float* P = F(a[4]) + row * S;
        int lim = std::min(S, offset + (r % T) + 1);
        for (int s = 0; s < lim; s++) P[s] = dot(q, K + (size_t)s * D, D) * scale;
        masked_softmax_row(P, S, lim, kvalid ? kvalid + (size_t)b * S : nullptr);
        std::memset(o, 0, sizeof(float) * D);
        for (int s = 0; s < lim; s++) {
          float pv = P[s];
          if (pv == 0.f) continue;
          for (int i = 0; i < D; i++) o[i] += pv * Vv[(size_t)s * D + i];
        }
      }
    }
    });
    return nullptr;
  }
  split2(B * Hkv, (double)B * Hq * T * S * D, [&](int p0, int p1) {
    ragen_attn::forward(F(a[0]), F(a[1]), F(a[2]), F(a[3]), F(a[4]), B, Hq, Hkv, T, S, D, offset, scale, kvalid, p0, p1);
  });
  return nullptr;
}

// attentionBackward(g, q, k, v, probs, dq, dk, dv, B, Hq, Hkv, T, S, D, scale)
static napi_value AttentionBackward(napi_env env, napi_callback_info info) {
  ARGS("attentionBackward", 15);
  int B = (int)a[8], Hq = (int)a[9], Hkv = (int)a[10], T = (int)a[11], S = (int)a[12], D = (int)a[13];
  float scale = (float)a[14];
  split2(B * Hkv, (double)B * Hq * T * S * D, [&](int p0, int p1) {
    ragen_attn::backward(F(a[0]), F(a[1]), F(a[2]), F(a[3]), F(a[4]), F(a[5]), F(a[6]), F(a[7]), B, Hq, Hkv, T, S, D, scale, p0, p1);
  });
  return nullptr;
}

#include "decode.inc"  // fused decode-step kernels (decodePack, decodeLayer, decodeHead)

#include "dispatch.inc"  // isa, setIsa, fmaPeak, threads

#include "nn.inc"  // the train step's non-GEMM kernels (nn.cc) on two threads

#include "ops.inc"  // the remaining backend ops (ops.cc): fills, copies, reductions, unary ops, embeddings

static napi_value Init(napi_env env, napi_value exports) {
  if (!ragen_isa::has_avx2()) {
    napi_throw_error(env, nullptr, "ragen native: this CPU lacks AVX2/FMA, which the native kernels need; use the wasm backend (RAGEN_BACKEND=wasm)");
    return nullptr;
  }
  napi_property_descriptor props[] = {
    {"setMemory", nullptr, SetMemory, nullptr, nullptr, nullptr, napi_default, nullptr},
    {"info", nullptr, Info, nullptr, nullptr, nullptr, napi_default, nullptr},
    {"gemm", nullptr, Gemm, nullptr, nullptr, nullptr, napi_default, nullptr},
    {"attention", nullptr, Attention, nullptr, nullptr, nullptr, napi_default, nullptr},
    {"attentionBackward", nullptr, AttentionBackward, nullptr, nullptr, nullptr, napi_default, nullptr},
    {"decodePack", nullptr, DecodePack, nullptr, nullptr, nullptr, napi_default, nullptr},
    {"decodeLayer", nullptr, DecodeLayer, nullptr, nullptr, nullptr, napi_default, nullptr},
    {"decodeHead", nullptr, DecodeHead, nullptr, nullptr, nullptr, napi_default, nullptr},
    {"isa", nullptr, Isa, nullptr, nullptr, nullptr, napi_default, nullptr},
    {"setIsa", nullptr, SetIsa, nullptr, nullptr, nullptr, napi_default, nullptr},
    {"fmaPeak", nullptr, FmaPeak, nullptr, nullptr, nullptr, napi_default, nullptr},
    {"threads", nullptr, Threads, nullptr, nullptr, nullptr, napi_default, nullptr},
    RAGEN_NN_PROPS,
    RAGEN_OPS_PROPS,
  };
  if (napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props) != napi_ok) {
    napi_throw_error(env, nullptr, "ragen native: napi_define_properties failed");
    return nullptr;
  }
  // native memory past the arena and bf16 weights (memory.cc, bf16.cc)
  ragen_register_memory(env, exports);
  return ragen_register_bf16(env, exports);
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
