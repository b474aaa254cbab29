// Causal attention with grouped KV heads for the train step and prefill (native/attention.cc): forward and backward on
// packed K / V panels and ragen_gemm's micro-kernels, each query-row block computed only up to its causal limit, on a
// thread's range of (batch, KV head) pairs; ragen.cc splits the pairs over its two threads.
#pragma once
#include <cstdint>

namespace ragen_attn {

/**
 * out (B, Hq, T, D) and probs (B, Hq, T, S) for the (b, kv) pairs [p0, p1) of B * Hkv: query t of head h sees keys
 * s <= offset + t of KV head h / (Hq / Hkv), and none with keyValid[b * S + s] == 0 (keyValid may be null). probs is
 * zero past each row's causal limit.
 */
void forward(const float* q, const float* k, const float* v, float* out, float* probs, int B, int Hq, int Hkv, int T, int S, int D, int offset,
             float scale, const int32_t* keyValid, int p0, int p1);

/**
 * dq, dk, dv (overwritten) of the pairs [p0, p1) from g = d out and forward's probs. Each row's extent is read from
 * probs (its last non-zero entry), so no offset is needed: a zero probability has a zero gradient term.
 */
void backward(const float* g, const float* q, const float* k, const float* v, const float* probs, float* dq, float* dk, float* dv, int B, int Hq,
              int Hkv, int T, int S, int D, float scale, int p0, int p1);

}  // namespace ragen_attn
