// The train step's non-GEMM kernels (see nn.h): one body (nn-body.inc) compiled for two vector types, AVX2's 8 lanes
// and AVX-512's 16 (under a target pragma, called only after ragen_isa said the cores have it).
#include "nn.h"

#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "isa.h"

namespace ragen_nn {

AdamWConsts adamw_consts(double lr, double beta1, double beta2, double eps, double wd, double bc1, double bc2) {
  return {(float)(1 - lr * wd), (float)beta1, (float)beta2, (float)(1 - beta1), (float)(1 - beta2), (float)(lr / bc1), (float)(1 / std::sqrt(bc2)),
          (float)eps};
}

namespace {

/** 8 float lanes (AVX2 + FMA); partial vectors through maskload / maskstore. */
struct VecAvx2 {
  using T = __m256;
  static constexpr int W = 8;
  static inline __m256i mask(int n) { return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)); }
  static inline T loadn(const float* p, int n) { return n == W ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, mask(n)); }
  static inline T loadn_fill(const float* p, int n, float fill) {
    return n == W ? _mm256_loadu_ps(p) : _mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(p, mask(n)), _mm256_castsi256_ps(mask(n)));
  }
  static inline void storen(float* p, T v, int n) {
    if (n == W)
      _mm256_storeu_ps(p, v);
    else
      _mm256_maskstore_ps(p, mask(n), v);
  }
  static inline T keep(T v, int n) { return _mm256_and_ps(v, _mm256_castsi256_ps(mask(n))); }
  static inline T set1(float x) { return _mm256_set1_ps(x); }
  static inline T zero() { return _mm256_setzero_ps(); }
  static inline T add(T a, T b) { return _mm256_add_ps(a, b); }
  static inline T sub(T a, T b) { return _mm256_sub_ps(a, b); }
  static inline T mul(T a, T b) { return _mm256_mul_ps(a, b); }
  static inline T div(T a, T b) { return _mm256_div_ps(a, b); }
  static inline T neg(T a) { return _mm256_xor_ps(a, _mm256_set1_ps(-0.f)); }
  static inline T fma(T a, T b, T c) { return _mm256_fmadd_ps(a, b, c); }
  static inline T max(T a, T b) { return _mm256_max_ps(a, b); }
  static inline T sqrt(T a) { return _mm256_sqrt_ps(a); }
  static inline float hsum(T v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
  }
  static inline float hmax(T v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_max_ss(s, _mm_movehdup_ps(s)));
  }
  /** Cephes-style exp as assembly/simd.ts's exp4 (inputs clamped to [-87.3, 88.38]). */
  static inline T exp(T x) {
    x = _mm256_min_ps(_mm256_max_ps(x, set1(-87.3f)), set1(88.3762626647949f));
    T fx = _mm256_floor_ps(_mm256_fmadd_ps(x, set1(1.44269504088896341f), set1(0.5f)));
    x = _mm256_fnmadd_ps(fx, set1(0.693359375f), x);
    x = _mm256_fnmadd_ps(fx, set1(-2.12194440e-4f), x);
    T y = set1(1.9875691500e-4f);
    y = _mm256_fmadd_ps(y, x, set1(1.3981999507e-3f));
    y = _mm256_fmadd_ps(y, x, set1(8.3334519073e-3f));
    y = _mm256_fmadd_ps(y, x, set1(4.1665795894e-2f));
    y = _mm256_fmadd_ps(y, x, set1(1.6666665459e-1f));
    y = _mm256_fmadd_ps(y, x, set1(5.0000001201e-1f));
    y = _mm256_fmadd_ps(y, _mm256_mul_ps(x, x), _mm256_add_ps(x, set1(1.f)));
    __m256i n = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(fx), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(y, _mm256_castsi256_ps(n));
  }
};

}  // namespace

namespace avx2 {
using V = VecAvx2;
#include "nn-body.inc"
}  // namespace avx2

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,fma,avx2")
namespace {

/** 16 float lanes (AVX-512 F/DQ); partial vectors through masked loads and stores. */
struct VecAvx512 {
  using T = __m512;
  static constexpr int W = 16;
  static inline __mmask16 mask(int n) { return (__mmask16)((1u << n) - 1); }
  static inline T loadn(const float* p, int n) { return n == W ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(mask(n), p); }
  static inline T loadn_fill(const float* p, int n, float fill) { return n == W ? _mm512_loadu_ps(p) : _mm512_mask_loadu_ps(_mm512_set1_ps(fill), mask(n), p); }
  static inline void storen(float* p, T v, int n) {
    if (n == W)
      _mm512_storeu_ps(p, v);
    else
      _mm512_mask_storeu_ps(p, mask(n), v);
  }
  static inline T keep(T v, int n) { return _mm512_maskz_mov_ps(mask(n), v); }
  static inline T set1(float x) { return _mm512_set1_ps(x); }
  static inline T zero() { return _mm512_setzero_ps(); }
  static inline T add(T a, T b) { return _mm512_add_ps(a, b); }
  static inline T sub(T a, T b) { return _mm512_sub_ps(a, b); }
  static inline T mul(T a, T b) { return _mm512_mul_ps(a, b); }
  static inline T div(T a, T b) { return _mm512_div_ps(a, b); }
  static inline T neg(T a) { return _mm512_xor_ps(a, _mm512_set1_ps(-0.f)); }
  static inline T fma(T a, T b, T c) { return _mm512_fmadd_ps(a, b, c); }
  static inline T max(T a, T b) { return _mm512_max_ps(a, b); }
  static inline T sqrt(T a) { return _mm512_sqrt_ps(a); }
  static inline float hsum(T v) {
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
  }
  static inline float hmax(T v) {
    __m256 h = _mm256_max_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_max_ss(s, _mm_movehdup_ps(s)));
  }
  static inline T exp(T x) {
    x = _mm512_min_ps(_mm512_max_ps(x, set1(-87.3f)), set1(88.3762626647949f));
    T fx = _mm512_roundscale_ps(_mm512_fmadd_ps(x, set1(1.44269504088896341f), set1(0.5f)), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    x = _mm512_fnmadd_ps(fx, set1(0.693359375f), x);
    x = _mm512_fnmadd_ps(fx, set1(-2.12194440e-4f), x);
    T y = set1(1.9875691500e-4f);
    y = _mm512_fmadd_ps(y, x, set1(1.3981999507e-3f));
    y = _mm512_fmadd_ps(y, x, set1(8.3334519073e-3f));
    y = _mm512_fmadd_ps(y, x, set1(4.1665795894e-2f));
    y = _mm512_fmadd_ps(y, x, set1(1.6666665459e-1f));
    y = _mm512_fmadd_ps(y, x, set1(5.0000001201e-1f));
    y = _mm512_fmadd_ps(y, _mm512_mul_ps(x, x), _mm512_add_ps(x, set1(1.f)));
    __m512i n = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvttps_epi32(fx), _mm512_set1_epi32(127)), 23);
    return _mm512_mul_ps(y, _mm512_castsi512_ps(n));
  }
};

}  // namespace

namespace avx512 {
using V = VecAvx512;
#include "nn-body.inc"
}  // namespace avx512
#pragma GCC pop_options

// ---------- dispatch on the path taken now ----------
#define RAGEN_NN_DISPATCH(fn, ...)                                   \
  do {                                                               \
    if (ragen_isa::level() >= ragen_isa::AVX512) return avx512::fn(__VA_ARGS__); \
    return avx2::fn(__VA_ARGS__);                                    \
  } while (0)

void swiglu(const float* gate, const float* up, float* out, size_t i0, size_t i1) { RAGEN_NN_DISPATCH(swiglu, gate, up, out, i0, i1); }
void swiglu_backward(const float* g, const float* gate, const float* up, float* dgate, float* dup, size_t i0, size_t i1) {
  RAGEN_NN_DISPATCH(swiglu_backward, g, gate, up, dgate, dup, i0, i1);
}
void axpy(float alpha, const float* x, float* y, size_t i0, size_t i1) { RAGEN_NN_DISPATCH(axpy, alpha, x, y, i0, i1); }
void binary(int op, const float* a, const float* b, float* out, size_t i0, size_t i1, size_t m, size_t inner) {
  RAGEN_NN_DISPATCH(binary, op, a, b, out, i0, i1, m, inner);
}
void rms_norm(const float* x, const float* w, float* y, float* rstd, int r0, int r1, int C, float eps) { RAGEN_NN_DISPATCH(rms_norm, x, w, y, rstd, r0, r1, C, eps); }
void rms_norm_backward(const float* g, const float* x, const float* w, const float* rstd, float* dx, float* dw, int r0, int r1, int C) {
  RAGEN_NN_DISPATCH(rms_norm_backward, g, x, w, rstd, dx, dw, r0, r1, C);
}
void softmax(const float* x, float* y, int r0, int r1, int C, bool log) { RAGEN_NN_DISPATCH(softmax, x, y, r0, r1, C, log); }
void softmax_backward(const float* y, const float* g, float* dx, int r0, int r1, int C, bool log) { RAGEN_NN_DISPATCH(softmax_backward, y, g, dx, r0, r1, C, log); }
void logprob_target(const float* logits, const int32_t* targets, float* out, float* lse, int r0, int r1, int V) {
  RAGEN_NN_DISPATCH(logprob_target, logits, targets, out, lse, r0, r1, V);
}
void logprob_target_backward(const float* g, const float* logits, const int32_t* targets, const float* lse, float* dlogits, int r0, int r1, int V) {
  RAGEN_NN_DISPATCH(logprob_target_backward, g, logits, targets, lse, dlogits, r0, r1, V);
}
void entropy(const float* logits, float* out, float* lse, int r0, int r1, int V) { RAGEN_NN_DISPATCH(entropy, logits, out, lse, r0, r1, V); }
void entropy_backward(const float* g, const float* logits, const float* lse, const float* ent, float* dlogits, int r0, int r1, int V) {
  RAGEN_NN_DISPATCH(entropy_backward, g, logits, lse, ent, dlogits, r0, r1, V);
}
void adamw(float* p, const float* g, float* m, float* v, size_t i0, size_t i1, const AdamWConsts& c) { RAGEN_NN_DISPATCH(adamw, p, g, m, v, i0, i1, c); }
void rope(const float* x, float* out, int B, int H, int T, int D, const float* tab, bool perBatch, float sign, int p0, int p1) {
  RAGEN_NN_DISPATCH(rope, x, out, B, H, T, D, tab, perBatch, sign, p0, p1);
}

void permute4(const float* src, float* dst, int n1, int n2, int n3, long s0, long s1, long s2, long s3, long r0, long r1) {
  for (long r = r0; r < r1; r++) {  // output row r = (i, j, k)
    const long k = r % n2, j = (r / n2) % n1, i = r / ((long)n2 * n1);
    const float* s = src + i * s0 + j * s1 + k * s2;
    float* o = dst + (size_t)r * n3;
    if (s3 == 1)
      std::memcpy(o, s, sizeof(float) * n3);
    else
      for (int l = 0; l < n3; l++) o[l] = s[l * s3];
  }
}

}  // namespace ragen_nn
