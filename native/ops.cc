// Plain loops for the ops in ops.h; -O3 with AVX2 vectorizes the contiguous ones (sum_squares, a float reduction it
// may not reorder, by hand). None of them is a hot spot of a train step (the GEMMs, attention and the fused nn.cc
// kernels are), so they stay readable.
#include "ops.h"

#include <immintrin.h>

#include <cmath>
#include <cstring>

namespace ragen_ops {

void fill(float* x, size_t n, float v) {
  for (size_t i = 0; i < n; i++) x[i] = v;
}

void copy_block(const float* src, long srcStride, float* dst, long dstStride, long rows, long cols, bool accumulate) {
  for (long r = 0; r < rows; r++) {
    const float* s = src + r * srcStride;
    float* d = dst + r * dstStride;
    if (accumulate)
      for (long c = 0; c < cols; c++) d[c] += s[c];
    else
      std::memmove(d, s, sizeof(float) * cols);
  }
}

void reduce_broadcast(const float* g, const float* a, float* out, size_t n, size_t m, size_t inner) {
  if (m == n && inner == 1) {  // same shape (a residual add's second input): g, or g * a, element by element
    if (a)
      for (size_t i = 0; i < n; i++) out[i] = g[i] * a[i];
    else
      std::memcpy(out, g, sizeof(float) * n);
    return;
  }
  for (size_t j = 0; j < m; j++) out[j] = 0;
  if (inner == 1) {  // b indexed by i % m: add whole rows of m
    for (size_t r = 0; r < n; r += m)
      for (size_t j = 0; j < m && r + j < n; j++) out[j] += a ? g[r + j] * a[r + j] : g[r + j];
    return;
  }
  for (size_t q = 0; q * inner < n; q++) {  // one b element per block of `inner`
    const size_t base = q * inner;
    float s = 0;
    for (size_t j = 0; j < inner && base + j < n; j++) s += a ? g[base + j] * a[base + j] : g[base + j];
    out[q % m] += s;
  }
}

static inline float sigmoid(float x) { return 1.f / (1.f + std::exp(-x)); }

void unary(int op, const float* x, float* out, size_t i0, size_t i1) {
  switch (op) {
    case 0: for (size_t i = i0; i < i1; i++) out[i] = -x[i]; break;
    case 1: for (size_t i = i0; i < i1; i++) out[i] = std::exp(x[i]); break;
    case 2: for (size_t i = i0; i < i1; i++) out[i] = std::log(x[i]); break;
    case 3: for (size_t i = i0; i < i1; i++) out[i] = std::sqrt(x[i]); break;
    case 4: for (size_t i = i0; i < i1; i++) out[i] = x[i] * sigmoid(x[i]); break;
    case 5: for (size_t i = i0; i < i1; i++) out[i] = sigmoid(x[i]); break;
    case 6: for (size_t i = i0; i < i1; i++) out[i] = std::tanh(x[i]); break;
    case 7: for (size_t i = i0; i < i1; i++) out[i] = x[i] > 0 ? x[i] : 0.f; break;
    default: for (size_t i = i0; i < i1; i++) out[i] = x[i] * x[i]; break;
  }
}

void unary_backward(int op, const float* x, const float* y, const float* g, float* out, size_t i0, size_t i1) {
  switch (op) {
    case 0: for (size_t i = i0; i < i1; i++) out[i] = -g[i]; break;
    case 1: for (size_t i = i0; i < i1; i++) out[i] = g[i] * y[i]; break;
    case 2: for (size_t i = i0; i < i1; i++) out[i] = g[i] / x[i]; break;
    case 3: for (size_t i = i0; i < i1; i++) out[i] = g[i] * (0.5f / y[i]); break;
    case 4:
      for (size_t i = i0; i < i1; i++) {
        const float s = sigmoid(x[i]);
        out[i] = g[i] * s * (1 + x[i] * (1 - s));
      }
      break;
    case 5: for (size_t i = i0; i < i1; i++) out[i] = g[i] * y[i] * (1 - y[i]); break;
    case 6: for (size_t i = i0; i < i1; i++) out[i] = g[i] * (1 - y[i] * y[i]); break;
    case 7: for (size_t i = i0; i < i1; i++) out[i] = x[i] > 0 ? g[i] : 0.f; break;
    default: for (size_t i = i0; i < i1; i++) out[i] = g[i] * 2 * x[i]; break;
  }
}

void affine(const float* x, float* out, size_t i0, size_t i1, float s, float t) {
  for (size_t i = i0; i < i1; i++) out[i] = x[i] * s + t;
}

void sum_axis(const float* x, float* out, long outer, long len, long inner) {
  for (long p = 0; p < outer; p++) {
    float* o = out + p * inner;
    for (long q = 0; q < inner; q++) o[q] = 0;
    for (long l = 0; l < len; l++) {
      const float* row = x + (p * len + l) * inner;
      for (long q = 0; q < inner; q++) o[q] += row[q];
    }
  }
}

void expand_axis(const float* g, float* out, long outer, long len, long inner, float s) {
  for (long p = 0; p < outer; p++)
    for (long l = 0; l < len; l++) affine(g + p * inner, out + (p * len + l) * inner, 0, inner, s, 0.f);
}

void embedding(const float* w, const int32_t* ids, float* out, long N, long C) {
  for (long n = 0; n < N; n++) std::memcpy(out + n * C, w + (long)ids[n] * C, sizeof(float) * C);
}

void embedding_backward(const float* g, const int32_t* ids, float* dw, long N, long C) {
  for (long n = 0; n < N; n++) {
    float* d = dw + (long)ids[n] * C;
    const float* s = g + n * C;
    for (long c = 0; c < C; c++) d[c] += s[c];
  }
}

double sum_squares(const float* x, size_t n) {
  // Float partial sums over blocks of 1024, added in double. The compiler keeps a float reduction in source order
  // (one add chain, ~4 cycles an element), so the block runs on 32 lanes by hand: 4 FMA chains of 8.
  double total = 0;
  for (size_t i = 0; i < n; i += 1024) {
    const size_t end = i + 1024 < n ? i + 1024 : n;
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    size_t j = i;
    for (; j + 32 <= end; j += 32)
      for (int q = 0; q < 4; q++) {
        const __m256 v = _mm256_loadu_ps(x + j + 8 * q);
        acc[q] = _mm256_fmadd_ps(v, v, acc[q]);
      }
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
    float s = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
    for (; j < end; j++) s += x[j] * x[j];
    total += s;
  }
  return total;
}

bool all_finite(const float* x, size_t n) {
  float bad = 0;
  for (size_t i = 0; i < n; i++) bad += x[i] - x[i];  // 0 for finite values; NaN for NaN and infinities
  return bad == 0;
}

}  // namespace ragen_ops
