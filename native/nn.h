// The train step's non-GEMM kernels (nn.cc): SwiGLU, RMSNorm, softmax / log-softmax, log-prob of the target, entropy,
// broadcast binary ops, axpy, AdamW, RoPE and 4-D permutes, each on one thread's element or row range. AVX-512 or AVX2 by
// ragen_isa::level() at each call; ragen.cc's nn.inc splits them over its two threads. Same arithmetic as
// assembly/elementwise.ts and assembly/nn.ts (the kernels they are tested against).
#pragma once
#include <cstddef>
#include <cstdint>

namespace ragen_nn {

/** AdamW's per-step constants in float32, formed in double as torch does (see adamw_consts). */
struct AdamWConsts {
  float decay, b1, b2, c1, c2, step, rbc2, eps;
};
AdamWConsts adamw_consts(double lr, double beta1, double beta2, double eps, double wd, double bc1, double bc2);

void swiglu(const float* gate, const float* up, float* out, size_t i0, size_t i1);
void swiglu_backward(const float* g, const float* gate, const float* up, float* dgate, float* dup, size_t i0, size_t i1);
void axpy(float alpha, const float* x, float* y, size_t i0, size_t i1);
/** out[i] = a[i] op b[(i / inner) % m] for i in [i0, i1), both multiples of the broadcast period (m, or inner). */
void binary(int op, const float* a, const float* b, float* out, size_t i0, size_t i1, size_t m, size_t inner);
void rms_norm(const float* x, const float* w, float* y, float* rstd, int r0, int r1, int C, float eps);
/** dx rows [r0, r1) overwritten; their dw terms added to dw (C floats). */
void rms_norm_backward(const float* g, const float* x, const float* w, const float* rstd, float* dx, float* dw, int r0, int r1, int C);
void softmax(const float* x, float* y, int r0, int r1, int C, bool log);
void softmax_backward(const float* y, const float* g, float* dx, int r0, int r1, int C, bool log);
void logprob_target(const float* logits, const int32_t* targets, float* out, float* lse, int r0, int r1, int V);
void logprob_target_backward(const float* g, const float* logits, const int32_t* targets, const float* lse, float* dlogits, int r0, int r1, int V);
void entropy(const float* logits, float* out, float* lse, int r0, int r1, int V);
void entropy_backward(const float* g, const float* logits, const float* lse, const float* ent, float* dlogits, int r0, int r1, int V);
void adamw(float* p, const float* g, float* m, float* v, size_t i0, size_t i1, const AdamWConsts& c);
/**
 * Rotary embedding of x (B, H, T, D) for the (b, h) pairs [p0, p1), with a table of cos (D/2) then sin (D/2) per
 * position entry (entry b*T + t when perBatch, else t); sign -1 rotates back (the backward pass).
 */
void rope(const float* x, float* out, int B, int H, int T, int D, const float* tab, bool perBatch, float sign, int p0, int p1);
/** dst = the 4-D permute of src: output dims n0..n3 read at source strides s0..s3, output rows [r0, r1) of n0*n1*n2. */
void permute4(const float* src, float* dst, int n1, int n2, int n3, long s0, long s1, long s2, long s3, long r0, long r1);

}  // namespace ragen_nn
