// What the local engine's models take in memory before the first batch (weights, and for each trainable parameter
// its gradient and AdamW's two moments, all float32), checked at load: against the 4 GiB that the wasm backend's tensor
// arena (one WebAssembly memory) can hold, so that a model too large fails with one sentence; on the native backend,
// whose tensors live in native memory, against the machine's RAM, as a warning.
import { totalmem } from 'node:os';
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
 * Check, before any weight is read, that the models of `input` fit the `backend`'s tensor memory. The wasm backend
 * keeps every tensor in one WebAssembly memory of at most 4 GiB: past it, a ConfigError naming the model's size and
 * the ways out (the native backend, model.engine=torch, LoRA). The native backend's arena is native memory with no
 * such limit: past the machine's RAM (`ramBytes`), a warning (printed with `warn`, and returned). js has no limit.
 */
export function checkArenaFits(
  config: ModelConfig,
  input: MemoryPlanInput,
  backend: BackendName,
  source: string,
  ramBytes: number = totalmem(),
  warn: (line: string) => void = console.warn,
): string | null {
  if (backend !== 'wasm' && backend !== 'native') return null;
  const plan = memoryPlan(config, input);
  const params = `${(plan.parameters / 1e6).toFixed(1)}M parameters`;
  if (backend === 'native') {
    if (plan.totalBytes <= ramBytes) return null;
    const line = `ragen engine: the model in \`${source}\` (${params}) needs ${gib(plan.totalBytes)} before any batch (${gib(plan.weightBytes)} of weights + ${gib(plan.trainingStateBytes)} of gradients and AdamW state), more than this machine's ${gib(ramBytes)} of RAM; expect swapping or the OOM killer, or train LoRA adapters with model.frozenDtype=bf16, or use model.engine=torch`;
    warn(line);
    return line;
  }
  if (plan.totalBytes - plan.nativeBytes <= ARENA_LIMIT_BYTES) return null;
  // The smallest layout of the same run: LoRA adapters, the critic as a head on the policy, the reference = the base.
  const small: MemoryPlanInput = {
    lora: { r: 8, alpha: 16 },
    critic: input.critic ? 'shared' : null,
    reference: input.reference ? 'base' : null,
  };
  const overrides = ['model.lora.rank=8', ...(input.critic === 'separate' ? ['model.critic.mode=shared'] : [])];
  const smallPlan = memoryPlan(config, small);
  const lora =
    !input.lora && smallPlan.totalBytes <= ARENA_LIMIT_BYTES
      ? `, or train LoRA adapters instead (${overrides.join(' ')} needs ${gib(smallPlan.totalBytes)})`
      : '';
  throw new ConfigError(
    `The model in \`${source}\` (${params}) needs ${gib(plan.totalBytes)} in the local engine's tensor arena (${gib(plan.weightBytes)} of float32 weights + ${gib(plan.trainingStateBytes)} of gradients and AdamW state) before any batch, more than the 4 GiB that the wasm backend's arena (one WebAssembly memory) can hold; run it on the native backend (model.backend=native: its tensors live in native memory, past 4 GiB) or on model.engine=torch${lora}.`,
  );
}
