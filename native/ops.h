// The backend ops the native backend ran as wasm kernels until its tensors moved to native memory (ops.cc): fills and
// strided copies, broadcast reductions, unary ops, axis sums, embeddings, sums of squares. Raw pointers, one thread's
// element or row range; ragen.cc's ops.inc splits the elementwise ones over its two threads. Same arithmetic as
// assembly/elementwise.ts and assembly/nn.ts up to float rounding (exp, log, tanh from <cmath>, not polynomial fits).
#pragma once
#include <cstddef>
#include <cstdint>

namespace ragen_ops {

void fill(float* x, size_t n, float v);
/** rows x cols block copy between strided layouts (element strides); adds into dst when accumulate. */
void copy_block(const float* src, long srcStride, float* dst, long dstStride, long rows, long cols, bool accumulate);
/** out[j] = sum of g[i] (times a[i] when a) over i with (i / inner) % m == j; out (m) overwritten. */
void reduce_broadcast(const float* g, const float* a, float* out, size_t n, size_t m, size_t inner);
/** out[i] = op(x[i]) for i in [i0, i1); op codes as UNARY_OPS (neg exp log sqrt silu sigmoid tanh relu square). */
void unary(int op, const float* x, float* out, size_t i0, size_t i1);
/** out[i] = g[i] * op'(x[i]) given y = op(x), for i in [i0, i1). */
void unary_backward(int op, const float* x, const float* y, const float* g, float* out, size_t i0, size_t i1);
/** out[i] = x[i] * s + t for i in [i0, i1). */
void affine(const float* x, float* out, size_t i0, size_t i1, float s, float t);
/** out (outer, inner) = sum over the middle axis of x (outer, len, inner). */
void sum_axis(const float* x, float* out, long outer, long len, long inner);
/** out (outer, len, inner) = g (outer, inner) * s. */
void expand_axis(const float* g, float* out, long outer, long len, long inner, float s);
/** out (N, C) = w[ids]. */
void embedding(const float* w, const int32_t* ids, float* out, long N, long C);
/** dw[ids[n]] += g[n]. */
void embedding_backward(const float* g, const int32_t* ids, float* dw, long N, long C);
/** Sum of x^2, accumulated in double. */
double sum_squares(const float* x, size_t n);
bool all_finite(const float* x, size_t n);

}  // namespace ragen_ops
