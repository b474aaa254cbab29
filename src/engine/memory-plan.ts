// What the local engine's models take in memory before the first batch (weights, and for each trainable parameter
// its gradient and AdamW's two moments, all float32), checked at load against the 4 GiB that the wasm and native
// backends' tensor arena (one WebAssembly memory) can hold, so that a model too large fails with one sentence.
import { countParameters, LINEAR_MODULES, weightShapes, type LoraConfig, type ModelConfig } from '../model/index.js';
import { ARENA_LIMIT_BYTES, type BackendName } from '../tensor/index.js';
import { ConfigError } from '../util/index.js';

/** The models of a local engine, as LocalPretrainedOptions and the checkpoint describe them. */
export interface MemoryPlanInput {
  lora: LoraConfig | null;
  critic: 'shared' | 'separate' | null;
  /** A frozen reference: 'base' (LoRA adapters off, no copy) or a separate copy of the weights. */
  reference: 'base' | 'copy' | null;
  /** bf16 puts the frozen projection weights in native memory, outside the arena. @default 'float32' */
  frozenDtype?: 'float32' | 'bf16';
}

/** Bytes of the engine's resident tensors, by part. */
export interface MemoryPlan {
  parameters: number;
  weightBytes: number;
  /** Gradient + AdamW m + v of every trainable tensor. */
  trainingStateBytes: number;
  totalBytes: number;
  /** Of totalBytes, those in native memory outside the arena (bf16 frozen projections). */
  nativeBytes: number;
}

const F32 = 4;
/** Gradient, AdamW first and second moment. */
const STATE_COPIES = 3;

/** Parameters of the LoRA adapters on `config` (A (r, in) and B (out, r) per adapted projection). */
export function loraParameters(config: ModelConfig, lora: LoraConfig): number {
  const { hiddenSize: C, headDim: D, numHeads: H, numKvHeads: K, intermediateSize: F } = config;
  const dims: Record<(typeof LINEAR_MODULES)[number], [number, number]> = {
    q_proj: [H * D, C],
    k_proj: [K * D, C],
    v_proj: [K * D, C],
    o_proj: [C, H * D],
    gate_proj: [F, C],
    up_proj: [F, C],
    down_proj: [C, F],
  };
  const t = lora.targetModules ?? 'all-linear';
  const all = t === 'all-linear' || t.includes('all-linear');
  const names = LINEAR_MODULES.filter((m) => all || t.includes(m));
  const perLayer = names.reduce((n, m) => n + lora.r * (dims[m][0] + dims[m][1]), 0);
  return perLayer * config.numLayers;
}

/** The resident bytes of a local engine's models (activations come on top, bounded per batch). */
export function memoryPlan(config: ModelConfig, input: MemoryPlanInput): MemoryPlan {
  const P = countParameters(config);
  const head = config.hiddenSize + 1; // the value head
  const adapters = input.lora ? loraParameters(config, input.lora) : 0;
  // The policy, its adapters, a reference copy, a separate critic's trunk, the value head.
  let weights = P + adapters;
  if (input.reference === 'copy') weights += P;
  if (input.critic === 'separate') weights += P;
  if (input.critic) weights += head;
  let trainable = input.lora ? adapters : P;
  if (input.critic === 'separate') trainable += P;
  if (input.critic) trainable += head;
  // bf16 frozen projections: 2 bytes each instead of 4, in native memory (the LoRA base; a reference copy)
  const frozenModels = input.frozenDtype === 'bf16' ? (input.lora ? 1 : 0) + (input.reference === 'copy' ? 1 : 0) : 0;
  const projections = [...weightShapes(config)]
    .filter(([name]) => name.endsWith('_proj.weight'))
    .reduce((n, [, shape]) => n + shape[0]! * shape[1]!, 0);
  const nativeBytes = frozenModels * projections * 2;
  const weightBytes = (weights - frozenModels * projections) * F32 + nativeBytes;
  const trainingStateBytes = trainable * STATE_COPIES * F32;
  return { parameters: P, weightBytes, trainingStateBytes, totalBytes: weightBytes + trainingStateBytes, nativeBytes };
}

const gib = (bytes: number): string => `${(bytes / 2 ** 30).toFixed(2)} GiB`;

/**
 * Throw a ConfigError, before any weight is read, when the models of `input` cannot fit the tensor arena of the
 * `backend` (wasm and native keep every tensor in one WebAssembly memory of at most 4 GiB; js has no such limit).
 */
export function checkArenaFits(
  config: ModelConfig,
  input: MemoryPlanInput,
  backend: BackendName,
  source: string,
): void {
  if (backend !== 'wasm' && backend !== 'native') return;
  const plan = memoryPlan(config, input);
  if (plan.totalBytes - plan.nativeBytes <= ARENA_LIMIT_BYTES) return;
  // The smallest layout of the same run: LoRA adapters, the critic as a head on the policy, the reference = the base.
  const small: MemoryPlanInput = {
    lora: { r: 8, alpha: 16 },
    critic: input.critic ? 'shared' : null,
    reference: input.reference ? 'base' : null,
  };
  const overrides = ['model.lora.rank=8', ...(input.critic === 'separate' ? ['model.critic.mode=shared'] : [])];
  const inArena = (p: MemoryPlan) => p.totalBytes - p.nativeBytes;
  let lora = '';
  const smallPlan = memoryPlan(config, small);
  const bf16Plan = memoryPlan(config, { ...small, frozenDtype: 'bf16' });
  if (!input.lora && inArena(smallPlan) <= ARENA_LIMIT_BYTES)
    lora = `, or train LoRA adapters instead (${overrides.join(' ')} needs ${gib(smallPlan.totalBytes)})`;
  else if (backend === 'native' && input.frozenDtype !== 'bf16' && inArena(bf16Plan) <= ARENA_LIMIT_BYTES)
    lora = `, or keep the frozen base as bf16 outside the arena (${[...(input.lora ? [] : overrides), 'model.frozenDtype=bf16'].join(' ')}: ${gib(inArena(bf16Plan))} in the arena + ${gib(bf16Plan.nativeBytes)} native)`;
  throw new ConfigError(
    `The model in \`${source}\` (${(plan.parameters / 1e6).toFixed(1)}M parameters) needs ${gib(inArena(plan))} in the local engine's tensor arena (${gib(plan.weightBytes - plan.nativeBytes)} of float32 weights + ${gib(plan.trainingStateBytes)} of gradients and AdamW state) before any batch, more than the 4 GiB that the ${backend} backend's arena (one WebAssembly memory) can hold; run it on model.engine=torch${lora}.`,
  );
}
