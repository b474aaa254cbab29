// The native addon's own float32 GEMM (see gemm.h): packed, blocked for the caches, with one micro-kernel per
// instruction-set path. This file is built for AVX2+FMA; the AVX-512 functions carry RAGEN_TARGET_AVX512 and run
// only after ragen_isa said the cores have it.
#include "gemm.h"

#include <immintrin.h>
#include <time.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

namespace ragen_gemm {
namespace {

/** A 64-byte aligned scratch buffer per thread that only grows. */
struct Scratch {
  std::vector<float> raw;
  float* get(size_t n) {
    if (raw.size() < n + 16) raw.resize(n + 16);
    return reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(raw.data()) + 63) & ~uintptr_t(63));
  }
};
thread_local Scratch scratch_a, scratch_b;

/** Transposes the 8x8 block at src (rows ls floats apart) into dst (rows ld floats apart): dst[c*ld + r] = src[r*ls + c]. */
inline void transpose8(const float* src, size_t ls, float* dst, size_t ld) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(src + i * ls);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int h = 0; h < 8; h += 4) {
    r[h] = _mm256_shuffle_ps(t[h], t[h + 2], 0x44);
    r[h + 1] = _mm256_shuffle_ps(t[h], t[h + 2], 0xee);
    r[h + 2] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0x44);
    r[h + 3] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0xee);
  }
  for (int i = 0; i < 4; i++) {
    _mm256_storeu_ps(dst + i * ld, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps(dst + (i + 4) * ld, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}

/** dst[k*nd + c] = src[c*ls + k] for c < cols, k < kc (8x8 blocks where whole, elements at the edges). */
inline void transpose_into(const float* src, size_t ls, int cols, int kc, float* dst, int nd) {
  const int c8 = cols & ~7, k8 = kc & ~7;
  for (int c = 0; c < c8; c += 8) {
    for (int k = 0; k < k8; k += 8) transpose8(src + (size_t)c * ls + k, ls, dst + (size_t)k * nd + c, nd);
    for (int k = k8; k < kc; k++)
      for (int i = 0; i < 8; i++) dst[(size_t)k * nd + c + i] = src[(size_t)(c + i) * ls + k];
  }
  for (int c = c8; c < cols; c++)
    for (int k = 0; k < kc; k++) dst[(size_t)k * nd + c] = src[(size_t)c * ls + k];
}

/**
 * Rows [0, kc) of src (ls floats apart), n columns, into panels of nd columns, k-major (panel p at dst + p * kc * nd,
 * zero-padded): row by row, so each source row is read once, whole.
 */
void copy_panels(const float* src, size_t ls, int n, int kc, float* dst, int nd) {
  const int whole = n / nd, rest = n - whole * nd;
  const bool vec = (nd & 7) == 0;
  for (int k = 0; k < kc; k++) {
    const float* s = src + (size_t)k * ls;
    float* o = dst + (size_t)k * nd;
    for (int p = 0; p < whole; p++, s += nd, o += (size_t)kc * nd)
      if (vec)
        for (int c = 0; c < nd; c += 8) _mm256_storeu_ps(o + c, _mm256_loadu_ps(s + c));
      else
        for (int c = 0; c < nd; c++) o[c] = s[c];
    if (rest > 0) {
      for (int c = 0; c < rest; c++) o[c] = s[c];
      for (int c = rest; c < nd; c++) o[c] = 0.f;
    }
  }
}

/** Panels of nr columns of op(B) rows [pc, pc+kc), columns [jc, jc+nc), each k-major (nr floats a k, zero-padded). */
void pack_b(bool tB, const float* B, int ldb, int pc, int kc, int jc, int nc, int nr, float* dst) {
  if (!tB) {
    copy_panels(B + (size_t)pc * ldb + jc, ldb, nc, kc, dst, nr);
    return;
  }
  for (int jr = 0; jr < nc; jr += nr) {
    float* d = dst + (size_t)jr * kc;
    const int cols = std::min(nr, nc - jr);
    transpose_into(B + (size_t)(jc + jr) * ldb + pc, ldb, cols, kc, d, nr);
    if (cols < nr)
      for (int k = 0; k < kc; k++)
        for (int c = cols; c < nr; c++) d[(size_t)k * nr + c] = 0.f;
  }
}

/** Blocks of mr rows of op(A) rows [ic, ic+mc), columns [pc, pc+kc), each k-major (mr floats a k, zero-padded). */
void pack_a(bool tA, const float* A, int lda, int ic, int mc, int pc, int kc, int mr, float* dst) {
  if (tA) {
    copy_panels(A + (size_t)pc * lda + ic, lda, mc, kc, dst, mr);
    return;
  }
  for (int ir = 0; ir < mc; ir += mr) {
    float* d = dst + (size_t)ir * kc;
    const int rows = std::min(mr, mc - ir);
    transpose_into(A + (size_t)(ic + ir) * lda + pc, lda, rows, kc, d, mr);
    if (rows < mr)
      for (int k = 0; k < kc; k++)
        for (int r = rows; r < mr; r++) d[(size_t)k * mr + r] = 0.f;
  }
}

// ---------- AVX2 + FMA: 6 rows x 16 columns (12 ymm accumulators) ----------
struct Avx2 {
  static constexpr int MR = 6, NR = 16, KC = 256, MC = 120, NC = 1024;

  template <int M>
  static void micro(int K, const float* A, const float* P, float* C, int ldc, int ncols, float alpha, bool acc) {
    __m256 s[M][2];
    for (int i = 0; i < M; i++) s[i][0] = s[i][1] = _mm256_setzero_ps();
    for (int k = 0; k < K; k++) {
      const __m256 b0 = _mm256_load_ps(P + (size_t)k * NR), b1 = _mm256_load_ps(P + (size_t)k * NR + 8);
      for (int i = 0; i < M; i++) {
        const __m256 a = _mm256_set1_ps(A[(size_t)k * MR + i]);
        s[i][0] = _mm256_fmadd_ps(a, b0, s[i][0]);
        s[i][1] = _mm256_fmadd_ps(a, b1, s[i][1]);
      }
    }
    const __m256 al = _mm256_set1_ps(alpha);
    for (int i = 0; i < M; i++) {
      float* row = C + (size_t)i * ldc;
      __m256 r0 = s[i][0], r1 = s[i][1];
      if (alpha != 1.f) {
        r0 = _mm256_mul_ps(r0, al);
        r1 = _mm256_mul_ps(r1, al);
      }
      if (ncols == NR) {
        if (acc) {
          r0 = _mm256_add_ps(r0, _mm256_loadu_ps(row));
          r1 = _mm256_add_ps(r1, _mm256_loadu_ps(row + 8));
        }
        _mm256_storeu_ps(row, r0);
        _mm256_storeu_ps(row + 8, r1);
      } else {
        alignas(32) float t[NR];
        _mm256_store_ps(t, r0);
        _mm256_store_ps(t + 8, r1);
        for (int c = 0; c < ncols; c++) row[c] = acc ? row[c] + t[c] : t[c];
      }
    }
  }

  static void block(int m, int K, const float* A, const float* P, float* C, int ldc, int ncols, float alpha, bool acc) {
    switch (m) {
      case 6: micro<6>(K, A, P, C, ldc, ncols, alpha, acc); break;
      case 5: micro<5>(K, A, P, C, ldc, ncols, alpha, acc); break;
      case 4: micro<4>(K, A, P, C, ldc, ncols, alpha, acc); break;
      case 3: micro<3>(K, A, P, C, ldc, ncols, alpha, acc); break;
      case 2: micro<2>(K, A, P, C, ldc, ncols, alpha, acc); break;
      default: micro<1>(K, A, P, C, ldc, ncols, alpha, acc); break;
    }
  }
};

/** AVX2 6x16 with A read in place (TA: A[k*lda + i], else A[i*lda + k]) against one packed 16-column panel. */
template <int M, bool TA>
void micro256(int K, const float* A, int lda, const float* P, float* C, int ldc, int ncols, float alpha, bool acc) {
  constexpr int NR = 16;
  __m256 s[M][2];
  for (int i = 0; i < M; i++) s[i][0] = s[i][1] = _mm256_setzero_ps();
  for (int k = 0; k < K; k++) {
    const __m256 b0 = _mm256_load_ps(P + (size_t)k * NR), b1 = _mm256_load_ps(P + (size_t)k * NR + 8);
    for (int i = 0; i < M; i++) {
      const __m256 a = _mm256_set1_ps(TA ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k]);
      s[i][0] = _mm256_fmadd_ps(a, b0, s[i][0]);
      s[i][1] = _mm256_fmadd_ps(a, b1, s[i][1]);
    }
  }
  const __m256 al = _mm256_set1_ps(alpha);
  for (int i = 0; i < M; i++) {
    float* row = C + (size_t)i * ldc;
    alignas(32) float t[NR];
    _mm256_store_ps(t, _mm256_mul_ps(s[i][0], al));
    _mm256_store_ps(t + 8, _mm256_mul_ps(s[i][1], al));
    for (int c = 0; c < ncols; c++) row[c] = acc ? row[c] + t[c] : t[c];
  }
}

template <bool TA>
void block256(int m, int K, const float* A, int lda, const float* P, float* C, int ldc, int ncols, float alpha, bool acc) {
  switch (m) {
    case 6: micro256<6, TA>(K, A, lda, P, C, ldc, ncols, alpha, acc); break;
    case 5: micro256<5, TA>(K, A, lda, P, C, ldc, ncols, alpha, acc); break;
    case 4: micro256<4, TA>(K, A, lda, P, C, ldc, ncols, alpha, acc); break;
    case 3: micro256<3, TA>(K, A, lda, P, C, ldc, ncols, alpha, acc); break;
    case 2: micro256<2, TA>(K, A, lda, P, C, ldc, ncols, alpha, acc); break;
    default: micro256<1, TA>(K, A, lda, P, C, ldc, ncols, alpha, acc); break;
  }
}

// ---------- AVX-512: 8 rows x 32 columns (16 zmm accumulators), masked edge stores ----------
// A's element (i, k) of the block is at A[i * lda + k], or A[k * lda + i] when TA (a packed block: lda = 8). B is
// packed (each panel serves every row block).
template <int M, bool TA>
RAGEN_TARGET_AVX512 void micro512(int K, const float* A, int lda, const float* P, float* C, int ldc, int ncols, float alpha, bool acc) {
  constexpr int NR = 32;
  __m512 s[M][2];
  for (int i = 0; i < M; i++) s[i][0] = s[i][1] = _mm512_setzero_ps();
  if (TA) {
    for (int k = 0; k < K; k++) {
      const __m512 b0 = _mm512_load_ps(P + (size_t)k * NR), b1 = _mm512_load_ps(P + (size_t)k * NR + 16);
      const float* ak = A + (size_t)k * lda;
      for (int i = 0; i < M; i++) {
        const __m512 a = _mm512_set1_ps(ak[i]);
        s[i][0] = _mm512_fmadd_ps(a, b0, s[i][0]);
        s[i][1] = _mm512_fmadd_ps(a, b1, s[i][1]);
      }
    }
  } else {
    const float* ar[M];
    for (int i = 0; i < M; i++) ar[i] = A + (size_t)i * lda;
    for (int k = 0; k < K; k++) {
      const __m512 b0 = _mm512_load_ps(P + (size_t)k * NR), b1 = _mm512_load_ps(P + (size_t)k * NR + 16);
      for (int i = 0; i < M; i++) {
        const __m512 a = _mm512_set1_ps(ar[i][k]);
        s[i][0] = _mm512_fmadd_ps(a, b0, s[i][0]);
        s[i][1] = _mm512_fmadd_ps(a, b1, s[i][1]);
      }
    }
  }
  const __mmask16 m0 = ncols >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << ncols) - 1);
  const __mmask16 m1 = ncols >= 32 ? (__mmask16)0xffff : ncols <= 16 ? (__mmask16)0 : (__mmask16)((1u << (ncols - 16)) - 1);
  const __m512 al = _mm512_set1_ps(alpha);
  for (int i = 0; i < M; i++) {
    float* row = C + (size_t)i * ldc;
    __m512 r0 = s[i][0], r1 = s[i][1];
    if (alpha != 1.f) {
      r0 = _mm512_mul_ps(r0, al);
      r1 = _mm512_mul_ps(r1, al);
    }
    if (acc) {
      r0 = _mm512_add_ps(r0, _mm512_maskz_loadu_ps(m0, row));
      r1 = _mm512_add_ps(r1, _mm512_maskz_loadu_ps(m1, row + 16));
    }
    _mm512_mask_storeu_ps(row, m0, r0);
    _mm512_mask_storeu_ps(row + 16, m1, r1);
  }
}

template <bool TA>
void block512(int m, int K, const float* A, int lda, const float* P, float* C, int ldc, int ncols, float alpha, bool acc) {
  switch (m) {
    case 8: micro512<8, TA>(K, A, lda, P, C, ldc, ncols, alpha, acc); break;
    case 7: micro512<7, TA>(K, A, lda, P, C, ldc, ncols, alpha, acc); break;
    case 6: micro512<6, TA>(K, A, lda, P, C, ldc, ncols, alpha, acc); break;
    case 5: micro512<5, TA>(K, A, lda, P, C, ldc, ncols, alpha, acc); break;
    case 4: micro512<4, TA>(K, A, lda, P, C, ldc, ncols, alpha, acc); break;
    case 3: micro512<3, TA>(K, A, lda, P, C, ldc, ncols, alpha, acc); break;
    case 2: micro512<2, TA>(K, A, lda, P, C, ldc, ncols, alpha, acc); break;
    default: micro512<1, TA>(K, A, lda, P, C, ldc, ncols, alpha, acc); break;
  }
}

/** The AVX-512 product: B packed in KC x NC blocks of 32-column panels, A read in place. */
void run512(bool tA, bool tB, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, bool accumulate, float* C, int ldc) {
  constexpr int MR = 8, NR = 32, KC = 256, MC = 128, NC = 1024;
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    if (!accumulate)
      for (int i = 0; i < M; i++) std::memset(C + (size_t)i * ldc, 0, sizeof(float) * N);
    return;
  }
  // A in place only for NN (measured: faster there; NT and TN products ran faster with A packed, k-major)
  const bool packA = tA || tB;
  float* pb = scratch_b.get((size_t)KC * (NC + NR));
  float* pa = packA ? scratch_a.get((size_t)(MC + MR) * KC) : nullptr;
  for (int jc = 0; jc < N; jc += NC) {
    const int nc = std::min(NC, N - jc);
    for (int pc = 0; pc < K; pc += KC) {
      const int kc = std::min(KC, K - pc);
      const bool beta = accumulate || pc > 0;
      pack_b(tB, B, ldb, pc, kc, jc, nc, NR, pb);
      for (int ic = 0; ic < M; ic += MC) {
        const int mc = std::min(MC, M - ic);
        if (packA) pack_a(tA, A, lda, ic, mc, pc, kc, MR, pa);
        for (int jr = 0; jr < nc; jr += NR)
          for (int ir = 0; ir < mc; ir += MR) {
            const int i = ic + ir, m = std::min(MR, mc - ir), n = std::min(NR, nc - jr);
            float* c = C + (size_t)i * ldc + jc + jr;
            const float* pj = pb + (size_t)jr * kc;
            if (packA)
              block512<true>(m, kc, pa + (size_t)ir * kc, MR, pj, c, ldc, n, alpha, beta);
            else
              block512<false>(m, kc, A + (size_t)i * lda + pc, lda, pj, c, ldc, n, alpha, beta);
          }
      }
    }
  }
}

/** The blocked product on one path: B panels of KC x NC packed once per block, A blocks of MC x KC inside. */
template <class Isa>
void run(bool tA, bool tB, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, bool accumulate, float* C, int ldc) {
  constexpr int MR = Isa::MR, NR = Isa::NR, KC = Isa::KC, MC = Isa::MC, NC = Isa::NC;
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    if (!accumulate)
      for (int i = 0; i < M; i++) std::memset(C + (size_t)i * ldc, 0, sizeof(float) * N);
    return;
  }
  float* pa = scratch_a.get((size_t)(MC + MR) * KC);
  float* pb = scratch_b.get((size_t)KC * (NC + NR));
  for (int jc = 0; jc < N; jc += NC) {
    const int nc = std::min(NC, N - jc);
    for (int pc = 0; pc < K; pc += KC) {
      const int kc = std::min(KC, K - pc);
      const bool beta = accumulate || pc > 0;
      pack_b(tB, B, ldb, pc, kc, jc, nc, NR, pb);
      for (int ic = 0; ic < M; ic += MC) {
        const int mc = std::min(MC, M - ic);
        pack_a(tA, A, lda, ic, mc, pc, kc, MR, pa);
        for (int jr = 0; jr < nc; jr += NR)
          for (int ir = 0; ir < mc; ir += MR)
            Isa::block(std::min(MR, mc - ir), kc, pa + (size_t)ir * kc, pb + (size_t)jr * kc, C + (size_t)(ic + ir) * ldc + jc + jr, ldc,
                       std::min(NR, nc - jr), alpha, beta);
      }
    }
  }
}

// ---------- decode's 16-column panels ----------
template <int M>
RAGEN_TARGET_AVX512 void panels512(int K, const float* A, const float* P, const float* P2, float* C, int ldc, int n1, int n2, const float* b1,
                                   const float* b2, bool acc) {
  constexpr int MR = 6, NR = 16;
  __m512 s[M][2];
  for (int i = 0; i < M; i++) s[i][0] = s[i][1] = _mm512_setzero_ps();
  if (P2) {
    for (int k = 0; k < K; k++) {
      const __m512 x0 = _mm512_load_ps(P + (size_t)k * NR), x1 = _mm512_load_ps(P2 + (size_t)k * NR);
      for (int i = 0; i < M; i++) {
        const __m512 a = _mm512_set1_ps(A[(size_t)k * MR + i]);
        s[i][0] = _mm512_fmadd_ps(a, x0, s[i][0]);
        s[i][1] = _mm512_fmadd_ps(a, x1, s[i][1]);
      }
    }
  } else {
    for (int k = 0; k < K; k++) {
      const __m512 x0 = _mm512_load_ps(P + (size_t)k * NR);
      for (int i = 0; i < M; i++) s[i][0] = _mm512_fmadd_ps(_mm512_set1_ps(A[(size_t)k * MR + i]), x0, s[i][0]);
    }
  }
  const int parts = P2 ? 2 : 1;
  for (int q = 0; q < parts; q++) {
    const int n = q ? n2 : n1;
    const __mmask16 mk = n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1);
    const float* b = q ? b2 : b1;
    const __m512 bv = b ? _mm512_maskz_loadu_ps(mk, b) : _mm512_setzero_ps();
    for (int i = 0; i < M; i++) {
      float* row = C + (size_t)i * ldc + q * NR;
      __m512 r = _mm512_add_ps(s[i][q], bv);
      if (acc) r = _mm512_add_ps(r, _mm512_maskz_loadu_ps(mk, row));
      _mm512_mask_storeu_ps(row, mk, r);
    }
  }
}

template <int M>
void panels256(int K, const float* A, const float* P, float* C, int ldc, int ncols, const float* bias, bool acc) {
  constexpr int MR = 6, NR = 16;
  __m256 s[M][2];
  for (int i = 0; i < M; i++) s[i][0] = s[i][1] = _mm256_setzero_ps();
  for (int k = 0; k < K; k++) {
    const __m256 b0 = _mm256_loadu_ps(P + (size_t)k * NR), b1 = _mm256_loadu_ps(P + (size_t)k * NR + 8);
    for (int i = 0; i < M; i++) {
      const __m256 a = _mm256_set1_ps(A[(size_t)k * MR + i]);
      s[i][0] = _mm256_fmadd_ps(a, b0, s[i][0]);
      s[i][1] = _mm256_fmadd_ps(a, b1, s[i][1]);
    }
  }
  alignas(32) float bb[NR] = {};
  if (bias)
    for (int c = 0; c < ncols; c++) bb[c] = bias[c];
  const __m256 bv0 = _mm256_load_ps(bb), bv1 = _mm256_load_ps(bb + 8);
  for (int i = 0; i < M; i++) {
    float* row = C + (size_t)i * ldc;
    __m256 r0 = _mm256_add_ps(s[i][0], bv0), r1 = _mm256_add_ps(s[i][1], bv1);
    if (ncols == NR) {
      if (acc) {
        r0 = _mm256_add_ps(r0, _mm256_loadu_ps(row));
        r1 = _mm256_add_ps(r1, _mm256_loadu_ps(row + 8));
      }
      _mm256_storeu_ps(row, r0);
      _mm256_storeu_ps(row + 8, r1);
    } else {
      alignas(32) float t[NR];
      _mm256_store_ps(t, r0);
      _mm256_store_ps(t + 8, r1);
      for (int c = 0; c < ncols; c++) row[c] = acc ? row[c] + t[c] : t[c];
    }
  }
}

void panels256_any(int m, int K, const float* A, const float* P, float* C, int ldc, int ncols, const float* bias, bool acc) {
  switch (m) {
    case 6: panels256<6>(K, A, P, C, ldc, ncols, bias, acc); break;
    case 5: panels256<5>(K, A, P, C, ldc, ncols, bias, acc); break;
    case 4: panels256<4>(K, A, P, C, ldc, ncols, bias, acc); break;
    case 3: panels256<3>(K, A, P, C, ldc, ncols, bias, acc); break;
    case 2: panels256<2>(K, A, P, C, ldc, ncols, bias, acc); break;
    default: panels256<1>(K, A, P, C, ldc, ncols, bias, acc); break;
  }
}

void panels512_any(int m, int K, const float* A, const float* P, const float* P2, float* C, int ldc, int n1, int n2, const float* b1,
                   const float* b2, bool acc) {
  switch (m) {
    case 6: panels512<6>(K, A, P, P2, C, ldc, n1, n2, b1, b2, acc); break;
    case 5: panels512<5>(K, A, P, P2, C, ldc, n1, n2, b1, b2, acc); break;
    case 4: panels512<4>(K, A, P, P2, C, ldc, n1, n2, b1, b2, acc); break;
    case 3: panels512<3>(K, A, P, P2, C, ldc, n1, n2, b1, b2, acc); break;
    case 2: panels512<2>(K, A, P, P2, C, ldc, n1, n2, b1, b2, acc); break;
    default: panels512<1>(K, A, P, P2, C, ldc, n1, n2, b1, b2, acc); break;
  }
}

// ---------- the FMA-throughput probe ----------
double thread_seconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/** n rounds of 12 independent FMA chains on 8 floats; returns a value so the work is kept. */
__attribute__((noinline)) float fma_loop256(long n) {
  __m256 a[12];
  const __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
  for (int i = 0; i < 12; i++) a[i] = _mm256_set1_ps((float)i);
  for (long r = 0; r < n; r++)
    for (int i = 0; i < 12; i++) a[i] = _mm256_fmadd_ps(a[i], x, y);
  __m256 s = a[0];
  for (int i = 1; i < 12; i++) s = _mm256_add_ps(s, a[i]);
  return _mm256_cvtss_f32(s);
}

/** The same on 16 floats (zmm), 12 chains: enough to cover 4-cycle latency on two FMA ports. */
__attribute__((noinline)) RAGEN_TARGET_AVX512 float fma_loop512(long n) {
  __m512 a[12];
  const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
  for (int i = 0; i < 12; i++) a[i] = _mm512_set1_ps((float)i);
  for (long r = 0; r < n; r++)
    for (int i = 0; i < 12; i++) a[i] = _mm512_fmadd_ps(a[i], x, y);
  __m512 s = a[0];
  for (int i = 1; i < 12; i++) s = _mm512_add_ps(s, a[i]);
  return _mm512_cvtss_f32(s);
}

volatile float sink;

}  // namespace

void sgemm_at(ragen_isa::Level level, bool tA, bool tB, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
              bool accumulate, float* C, int ldc) {
  if (level >= ragen_isa::AVX512)
    run512(tA, tB, M, N, K, alpha, A, lda, B, ldb, accumulate, C, ldc);
  else
    run<Avx2>(tA, tB, M, N, K, alpha, A, lda, B, ldb, accumulate, C, ldc);
}

void sgemm(bool tA, bool tB, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, bool accumulate, float* C, int ldc) {
  sgemm_at(ragen_isa::level(), tA, tB, M, N, K, alpha, A, lda, B, ldb, accumulate, C, ldc);
}

int panel_width() { return ragen_isa::level() >= ragen_isa::AVX512 ? 32 : 16; }

size_t panels_size(int K, int N) {
  const int nr = panel_width();
  return (size_t)((N + nr - 1) / nr) * nr * (size_t)std::max(K, 0);
}

void pack_panels(bool tB, const float* B, int ldb, int K, int N, float* dst) { pack_b(tB, B, ldb, 0, K, 0, N, panel_width(), dst); }

void gemm_panels(bool tA, int M, int N, int K, float alpha, const float* A, int lda, const float* P, size_t pstride, float* C, int ldc, bool acc) {
  const bool wide = ragen_isa::level() >= ragen_isa::AVX512;
  const int nr = wide ? 32 : 16, mr = wide ? 8 : 6;
  for (int jr = 0; jr < N; jr += nr) {
    const float* pj = P + (size_t)(jr / nr) * pstride;
    const int n = std::min(nr, N - jr);
    for (int ir = 0; ir < M; ir += mr) {
      const int m = std::min(mr, M - ir);
      const float* a = tA ? A + ir : A + (size_t)ir * lda;
      float* c = C + (size_t)ir * ldc + jr;
      if (wide) {
        if (tA)
          block512<true>(m, K, a, lda, pj, c, ldc, n, alpha, acc);
        else
          block512<false>(m, K, a, lda, pj, c, ldc, n, alpha, acc);
      } else if (tA) {
        block256<true>(m, K, a, lda, pj, c, ldc, n, alpha, acc);
      } else {
        block256<false>(m, K, a, lda, pj, c, ldc, n, alpha, acc);
      }
    }
  }
}

void panels16(int m, int K, const float* A, const float* P, const float* P2, float* C, int ldc, int ncols, int ncols2, const float* bias,
              const float* bias2, bool acc) {
  if (ragen_isa::level() >= ragen_isa::AVX512) {
    panels512_any(m, K, A, P, P2, C, ldc, ncols, ncols2, bias, bias2, acc);
    return;
  }
  panels256_any(m, K, A, P, C, ldc, ncols, bias, acc);
  if (P2) panels256_any(m, K, A, P2, C + 16, ldc, ncols2, bias2, acc);
}

double fma_peak(ragen_isa::Level level, double seconds) {
  const bool wide = level >= ragen_isa::AVX512;
  const double per_round = 12.0 * (wide ? 16 : 8) * 2;
  long n = 1 << 16;
  double best = 0;
  const double t_end = thread_seconds() + seconds;
  while (thread_seconds() < t_end) {
    const double t0 = thread_seconds();
    sink = wide ? fma_loop512(n) : fma_loop256(n);
    const double dt = thread_seconds() - t0;
    if (dt < 1e-3) {
      n *= 4;
      continue;
    }
    best = std::max(best, per_round * (double)n / dt / 1e9);
  }
  return best;
}

}  // namespace ragen_gemm
