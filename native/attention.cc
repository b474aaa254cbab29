// Causal attention (see attention.h): per (batch, KV head) pair, K and V are packed once into GEMM panels and every
// block of query rows runs the micro-kernels only over the keys it can see, so the masked upper triangle costs
// nothing (the step's full-square products did twice the work). Row softmax as ragen.cc's masked_softmax_row.
#include "attention.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "gemm.h"

namespace ragen_attn {
namespace {

/** Scratch that only grows, one per thread and use. */
struct Buf {
  std::vector<float> v;
  float* get(size_t n) {
    if (v.size() < n + 16) v.resize(n + 16);
    return reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(v.data()) + 63) & ~uintptr_t(63));
  }
};
thread_local Buf pk, pv, pq, pg, ds;
thread_local std::vector<int> lims;

/** exp of 8 lanes (Cephes-style polynomial, as ragen.cc's exp8). */
inline __m256 exp8(__m256 x) {
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

inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_hadd_ps(s, s);
  s = _mm_hadd_ps(s, s);
  return _mm_cvtss_f32(s);
}

/** Softmax of row[0, lim) with masked keys (valid[s] == 0) at zero; zeros in [lim, S). */
void softmax_row(float* row, int S, int lim, const int32_t* valid) {
  float mx = -INFINITY;
  for (int s = 0; s < lim; s++) {
    if (valid && !valid[s]) row[s] = -INFINITY;
    mx = std::max(mx, row[s]);
  }
  if (mx == -INFINITY) {
    std::memset(row, 0, sizeof(float) * S);
    return;
  }
  const __m256 mv = _mm256_set1_ps(mx);
  __m256 acc = _mm256_setzero_ps();
  int s = 0;
  for (; s + 8 <= lim; s += 8) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(row + s), mv));
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
  const float inv = 1.f / sum;
  for (s = 0; s < lim; s++) row[s] = (valid && !valid[s]) ? 0.f : row[s] * inv;
  std::memset(row + lim, 0, sizeof(float) * (S - lim));
}

/** 1 + the index of the row's last non-zero entry (0 when all are zero). */
inline int extent(const float* row, int S) {
  int s = S;
  while (s > 0 && (s & 7) && row[s - 1] == 0.f) s--;
  if (s & 7) return s;
  const __m256 zero = _mm256_setzero_ps();
  for (; s > 0; s -= 8) {  // 8 at a time from an aligned-to-8 index: the last block with a non-zero entry
    const int nz = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(row + s - 8), zero, _CMP_NEQ_UQ));
    if (nz) return s - 8 + 32 - __builtin_clz((unsigned)nz);
  }
  return 0;
}

}  // namespace

void forward(const float* q, const float* k, const float* v, float* out, float* probs, int B, int Hq, int Hkv, int T, int S, int D, int offset,
             float scale, const int32_t* keyValid, int p0, int p1) {
  const int grp = Hq / Hkv, nr = ragen_gemm::panel_width(), mb = nr == 32 ? 8 : 6;
  float* kp = pk.get(ragen_gemm::panels_size(D, S));  // K^T (D, S)
  float* vp = pv.get(ragen_gemm::panels_size(S, D));  // V (S, D)
  for (int p = p0; p < p1; p++) {
    const int b = p / Hkv, kv = p % Hkv;
    const float* K = k + (size_t)p * S * D;
    const float* V = v + (size_t)p * S * D;
    const int32_t* valid = keyValid ? keyValid + (size_t)b * S : nullptr;
    ragen_gemm::pack_panels(true, K, D, D, S, kp);
    ragen_gemm::pack_panels(false, V, D, S, D, vp);
    for (int gi = 0; gi < grp; gi++) {
      const size_t head = (size_t)b * Hq + (size_t)kv * grp + gi;
      const float* Q = q + head * T * D;
      float* O = out + head * T * D;
      float* P = probs + head * T * S;
      for (int t0 = 0; t0 < T; t0 += mb) {
        const int m = std::min(mb, T - t0), lim = std::min(S, offset + t0 + m);
        float* pr = P + (size_t)t0 * S;
        ragen_gemm::gemm_panels(false, m, lim, D, scale, Q + (size_t)t0 * D, D, kp, (size_t)D * nr, pr, S, false);
        for (int r = 0; r < m; r++) softmax_row(pr + (size_t)r * S, S, std::min(S, offset + t0 + r + 1), valid);
        ragen_gemm::gemm_panels(false, m, D, lim, 1.f, pr, S, vp, (size_t)S * nr, O + (size_t)t0 * D, D, false);
      }
    }
  }
}

void backward(const float* g, const float* q, const float* k, const float* v, const float* probs, float* dq, float* dk, float* dv, int B, int Hq,
              int Hkv, int T, int S, int D, float scale, int p0, int p1) {
  (void)B;
  const int grp = Hq / Hkv, nr = ragen_gemm::panel_width(), mb = nr == 32 ? 8 : 6, R = grp * T;
  float* vt = pv.get(ragen_gemm::panels_size(D, S));  // V^T (D, S), for dP = G V^T
  float* kn = pk.get(ragen_gemm::panels_size(S, D));  // K (S, D), for dQ = dS K
  float* qn = pq.get(ragen_gemm::panels_size(T, D));  // Q of one head (T, D), for dK = dS^T Q
  float* gn = pg.get(ragen_gemm::panels_size(T, D));  // G of one head (T, D), for dV = P^T G
  float* dS = ds.get((size_t)R * S);
  lims.resize(R);
  for (int p = p0; p < p1; p++) {
    const int b = p / Hkv, kv = p % Hkv;
    const size_t head0 = (size_t)b * Hq + (size_t)kv * grp;
    const float* K = k + (size_t)p * S * D;
    const float* V = v + (size_t)p * S * D;
    float* dK = dk + (size_t)p * S * D;
    float* dV = dv + (size_t)p * S * D;
    ragen_gemm::pack_panels(true, V, D, D, S, vt);
    ragen_gemm::pack_panels(false, K, D, S, D, kn);
    // dS = P * (dP - rowsum(P * dP)) * scale with dP = G V^T, rows of the whole group (R = grp * T); dQ = dS K
    for (int r0 = 0; r0 < R; r0 += mb) {
      const int m = std::min(mb, R - r0);
      const float* P = probs + head0 * T * S + (size_t)r0 * S;
      const float* G = g + head0 * T * D + (size_t)r0 * D;
      float* dSr = dS + (size_t)r0 * S;
      int lim = 0;
      for (int r = 0; r < m; r++) lim = std::max(lim, lims[r0 + r] = extent(P + (size_t)r * S, S));
      if (lim > 0) ragen_gemm::gemm_panels(false, m, lim, D, 1.f, G, D, vt, (size_t)D * nr, dSr, S, false);
      for (int r = 0; r < m; r++) {
        const float* pr = P + (size_t)r * S;
        float* dr = dSr + (size_t)r * S;
        const int l = lims[r0 + r];
        __m256 acc = _mm256_setzero_ps();
        int s = 0;
        for (; s + 8 <= l; s += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(pr + s), _mm256_loadu_ps(dr + s), acc);
        float d = hsum8(acc);
        for (; s < l; s++) d += pr[s] * dr[s];
        for (s = 0; s < l; s++) dr[s] = pr[s] * (dr[s] - d) * scale;
        std::memset(dr + l, 0, sizeof(float) * (S - l));
      }
      ragen_gemm::gemm_panels(false, m, D, lim, 1.f, dSr, S, kn, (size_t)S * nr, dq + head0 * T * D + (size_t)r0 * D, D, false);
    }
    // dK = sum over the group's heads of dS^T Q, dV of P^T G; key block s0 meets only the rows that see it
    for (int gi = 0; gi < grp; gi++) {
      const float* Q = q + (head0 + gi) * T * D;
      const float* G = g + (head0 + gi) * T * D;
      const float* P = probs + (head0 + gi) * T * S;
      const float* dSg = dS + (size_t)gi * T * S;
      const int* lg = lims.data() + (size_t)gi * T;
      ragen_gemm::pack_panels(false, Q, D, T, D, qn);
      ragen_gemm::pack_panels(false, G, D, T, D, gn);
      int first = 0;  // the first row reaching key s0; rows before it end at or before s0 (their terms are zero)
      for (int s0 = 0; s0 < S; s0 += mb) {
        const int m = std::min(mb, S - s0);
        while (first < T && lg[first] <= s0) first++;
        const int kk = T - first;
        ragen_gemm::gemm_panels(true, m, D, kk, 1.f, dSg + (size_t)first * S + s0, S, qn + (size_t)first * nr, (size_t)T * nr, dK + (size_t)s0 * D, D, gi > 0);
        ragen_gemm::gemm_panels(true, m, D, kk, 1.f, P + (size_t)first * S + s0, S, gn + (size_t)first * nr, (size_t)T * nr, dV + (size_t)s0 * D, D, gi > 0);
      }
    }
  }
}

}  // namespace ragen_attn
