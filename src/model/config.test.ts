import { describe, expect, it } from 'vitest';
import { ConfigError } from '../util/index.js';
import { configFromHF, configToHF, countParameters, modelConfig } from './config.js';

// Abridged from the published config.json of Qwen2.5-0.5B-Instruct and Qwen3-0.6B.
const qwen25 = {
  architectures: ['Qwen2ForCausalLM'],
  model_type: 'qwen2',
  hidden_act: 'silu',
  hidden_size: 896,
  intermediate_size: 4864,
  max_position_embeddings: 32768,
  num_attention_heads: 14,
  num_hidden_layers: 24,
  num_key_value_heads: 2,
  rms_norm_eps: 1e-6,
  rope_theta: 1000000.0,
  tie_word_embeddings: true,
  vocab_size: 151936,
  bos_token_id: 151643,
  eos_token_id: 151645,
  use_sliding_window: false,
};
const qwen3 = {
  model_type: 'qwen3',
  attention_bias: false,
  head_dim: 128,
  hidden_size: 1024,
  intermediate_size: 3072,
  num_attention_heads: 16,
  num_hidden_layers: 28,
  num_key_value_heads: 8,
  rms_norm_eps: 1e-6,
  rope_theta: 1000000,
  tie_word_embeddings: true,
  vocab_size: 151936,
  max_position_embeddings: 40960,
};

describe('model config', () => {
  it('reads Qwen2.5 with qkv bias and the derived head_dim', () => {
    const c = configFromHF(qwen25);
    expect(c).toMatchObject({
      modelType: 'qwen2',
      headDim: 64,
      numKvHeads: 2,
      qkvBias: true,
      oBias: false,
      qkNorm: false,
      tieWordEmbeddings: true,
      eosTokenId: 151645,
    });
    // Qwen2.5-0.5B has 494,032,768 parameters.
    expect(countParameters(c)).toBe(494032768);
  });

  it('reads Qwen3 with q/k norm and an explicit head_dim', () => {
    const c = configFromHF(qwen3);
    expect(c).toMatchObject({ modelType: 'qwen3', headDim: 128, qkvBias: false, qkNorm: true });
    // Qwen3-0.6B: 596,049,920 parameters (embedding tied).
    expect(countParameters(c)).toBe(596049920);
  });

  it('round-trips through configToHF', () => {
    const c = modelConfig({
      vocabSize: 64,
      hiddenSize: 32,
      intermediateSize: 48,
      numLayers: 2,
      numHeads: 4,
      numKvHeads: 2,
      eosTokenId: 3,
    });
    expect(configFromHF(configToHF(c))).toEqual(c);
    const l = modelConfig({
      modelType: 'llama',
      vocabSize: 64,
      hiddenSize: 32,
      intermediateSize: 48,
      numLayers: 2,
      numHeads: 4,
      tieWordEmbeddings: false,
    });
    expect(configFromHF(configToHF(l))).toEqual(l);
  });

  it('rejects unsupported or inconsistent configs with the key and the fix', () => {
    expect(() => configFromHF({ ...qwen25, model_type: 'qwen' })).toThrow(
      /model_type `qwen` is not supported.*Did you mean `qwen2`/,
    );
    expect(() => configFromHF({ ...qwen25, num_key_value_heads: 3 })).toThrow(
      /num_attention_heads \(14\) must be a multiple of num_key_value_heads \(3\)/,
    );
    expect(() => configFromHF({ ...qwen25, hidden_size: undefined })).toThrow(/missing required key `hidden_size`/);
    expect(() => configFromHF({ ...qwen25, rope_scaling: { type: 'yarn' } })).toThrow(/RoPE scaling `yarn`/);
    expect(() => configFromHF({ ...qwen25, rope_parameters: { rope_type: 'llama3', rope_theta: 5e5 } })).toThrow(
      ConfigError,
    );
    expect(
      configFromHF({ ...qwen25, rope_theta: undefined, rope_parameters: { rope_type: 'default', rope_theta: 5e5 } })
        .ropeTheta,
    ).toBe(5e5);
    expect(() => configFromHF({ ...qwen25, hidden_act: 'gelu' })).toThrow(/hidden_act `gelu`/);
    expect(() =>
      modelConfig({
        modelType: 'qwen3',
        vocabSize: 8,
        hiddenSize: 8,
        intermediateSize: 8,
        numLayers: 1,
        numHeads: 2,
        qkvBias: true,
        oBias: false,
      }),
    ).toThrow(/attention_bias sets q\/k\/v and o_proj biases together/);
  });
});
