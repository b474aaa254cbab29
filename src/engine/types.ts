// The Engine seam (DESIGN.md): what the agent loop and the trainer ask of any policy backend.
// Implementations: `local` (in-process, src/model), later `torch` (a PyTorch worker) and `openai` (generation only).

/** Sampling settings for one batched `generate` call. */
export interface SamplingParams {
  /** Most tokens to sample per sequence. */
  maxNewTokens: number;
  /** 0 means greedy. */
  temperature: number;
  /** Nucleus sampling mass (1 = off). */
  topP?: number;
  /** Keep only the k most likely tokens (0 = off). */
  topK?: number;
  /** Stop after sampling any of these ids (the id is kept in `tokens`). */
  stopTokenIds?: number[];
  /** Stop once the decoded completion contains any of these strings (the tokens sampled so far are kept). */
  stopStrings?: string[];
  /** Seed of the sampler: same prompts, params and seed -> same tokens. */
  seed: number;
}

/** One sampled completion: the exact ids sampled, their log-probs under the sampling policy. */
export interface Generation {
  tokens: number[];
  /** log p(token) under the model's distribution at temperature 1 (what the trainer's ratio uses). */
  logprobs: number[];
  finishReason: 'stop' | 'length';
}

/** Which model a forward pass uses. */
export type ModelRole = 'policy' | 'reference' | 'critic';

/** Per-token outputs of a teacher-forced forward pass over `sequences` (position t scores token t+1). */
export interface ForwardResult {
  logprobs: Float32Array[];
  entropy?: Float32Array[];
  values?: Float32Array[];
}

export interface Engine {
  /** e.g. 'local', 'torch', 'openai'. */
  readonly kind: string;
  generate(prompts: readonly (readonly number[])[], params: SamplingParams): Promise<Generation[]>;
  forward(sequences: readonly (readonly number[])[], options: { role: ModelRole; entropy?: boolean }): Promise<ForwardResult>;
}
