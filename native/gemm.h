// The native addon's own float32 GEMM, dispatched at run time on the instruction sets present (native/isa.h):
// an AVX-512 8x32 micro-kernel where the cores have AVX-512 F/BW/DQ/VL, else an AVX2/FMA 6x16 one. One thread;
// ragen.cc splits big products over its two threads.
#pragma once
#include "isa.h"

namespace ragen_gemm {

/**
 * C (M, N) = alpha op(A) op(B) (+ C when accumulate), row-major; op(A) is (M, K): A[i*lda + k], or A[k*lda + i] when
 * tA; op(B) is (K, N): B[k*ldb + j], or B[j*ldb + k] when tB. Runs the path of ragen_isa::level().
 */
void sgemm(bool tA, bool tB, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb, bool accumulate, float* C, int ldc);

/** sgemm on the given path (which must be present: ragen_isa::best() >= level). */
void sgemm_at(ragen_isa::Level level, bool tA, bool tB, int M, int N, int K, float alpha, const float* A, int lda, const float* B, int ldb,
              bool accumulate, float* C, int ldc);

/** Width of the panels pack_panels makes on the path taken now: 32 columns on AVX-512, 16 on AVX2. */
int panel_width();

/** Floats pack_panels writes for an op(B) of K rows and N columns. */
size_t panels_size(int K, int N);

/**
 * op(B) (K, N) into panels of panel_width() columns, each k-major (width floats a k, columns past N zero), panel p at
 * dst + p * K * width. op(B) is B[k*ldb + j], or B[j*ldb + k] when tB. For kernels that reuse one packed operand
 * across many small products (native/attention.cc).
 */
void pack_panels(bool tB, const float* B, int ldb, int K, int N, float* dst);

/**
 * C (M, N) = alpha op(A) P (+ C when acc) with P pack_panels' output: its first N columns and K rows (rows from k0:
 * pass P + k0 * width), panels pstride floats apart. op(A) is A[i*lda + k], or A[k*lda + i] when tA, read in place.
 * K may be 0 (C = 0, or C unchanged when acc).
 */
void gemm_panels(bool tA, int M, int N, int K, float alpha, const float* A, int lda, const float* P, size_t pstride, float* C, int ldc, bool acc);

/**
 * Decode's packed panels: C (m, ncols) = A P (+ bias) (+ C when acc) for m <= 6 rows, A packed k-major in blocks of 6
 * rows (6 floats a k), P one panel of 16 columns packed k-major (16 floats a k, ncols <= 16 of them real), and, when
 * P2 is not null, a second panel P2 for the 16 columns after them (ncols2 real) into C + 16. AVX-512 or AVX2 by level().
 */
void panels16(int m, int K, const float* A, const float* P, const float* P2, float* C, int ldc, int ncols, int ncols2, const float* bias,
              const float* bias2, bool acc);

/**
 * Floating-point rate of one thread issuing independent fused multiply-adds at the given width (the cores' ceiling
 * for any float32 kernel on that path), GFLOP/s of the thread's own CPU time over about `seconds`.
 */
double fma_peak(ragen_isa::Level level, double seconds);

}  // namespace ragen_gemm
