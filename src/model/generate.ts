// Batched sampling with a KV cache: prompts are left-padded into one cache (per-sequence RoPE positions and
// a key mask hide the padding), decoded one token per step; finished sequences are compacted out of the batch.
import { affine, logprobOfTarget, noGrad, softmax, tidy, type Tensor } from '../tensor/index.js';
import { ConfigError, RagenError, Rng, type RgbImage } from '../util/index.js';
import { FastDecoder, hasFastDecode } from './decode-fast.js';
import type { ModelConfig } from './config.js';
import { fuseWeights, type FusedWeights } from './fused.js';
import { KVCache } from './kv-cache.js';
import { lastLogits, prefill } from './prefill.js';
import { argmax, Sampler } from './sampling.js';
import { suppressLogits } from './suppress.js';
import type { Transformer } from './transformer.js';

/** Sampling settings for one batched generation (the Engine's `SamplingParams`). */
export interface SamplingParams {
  /** Most tokens to sample per sequence. */
  maxNewTokens: number;
  /** 0 = greedy. */
  temperature: number;
  /** Nucleus mass (1 = off). @default 1 */
  topP?: number;
  /** Keep the k most likely tokens (0 = off). @default 0 */
  topK?: number;
  /** Stop after sampling any of these ids (the id is kept). */
  stopTokenIds?: number[];
  /** Stop once the decoded completion contains one of these (needs `decode`); the tokens sampled so far are kept. */
  stopStrings?: string[];
  /** Same prompts, settings and seed -> same tokens. */
  seed: number;
  /**
   * Called after each decode step with the token each still-running sequence sampled in it (what streaming reads).
   * The tokens reported for a prompt are exactly its completion's tokens, in order. Engines that cannot report
   * per step (the torch worker) do not call it.
   */
  onTokens?: (sampled: readonly SampledToken[]) => void;
  /**
   * Asked after each decode step for every running sequence (by prompt index): true stops it there, keeping what it
   * sampled (finish reason `length`), e.g. a streamed answer whose client went away. Engines without per-step
   * decoding (the torch worker) do not ask.
   */
  cancelled?: (index: number) => boolean;
  /**
   * Per prompt, the images of its `<|image_pad|>` runs in order (a vision-language model's prompts; undefined or empty
   * for a text prompt). A text-only model refuses a call that carries any.
   */
  images?: readonly (readonly RgbImage[] | undefined)[];
}

/** Throws when `params` carries images for a text-only model, naming the first prompt that has them. */
export function refuseImages(params: Pick<SamplingParams, 'images'>, model: string): void {
  const i = params.images?.findIndex((im) => im !== undefined && im.length > 0) ?? -1;
  if (i >= 0)
    throw new ConfigError(
      `The model \`${model}\` is text-only and cannot read the ${params.images![i]!.length} image(s) of prompt ${i}. Use a vision-language model (Qwen2.5-VL) or send the env's text observation without images.`,
    );
}

/** One token of one sequence, as `onTokens` reports it. */
export interface SampledToken {
  /** Which prompt (its index in the `prompts` given to generate). */
  index: number;
  token: number;
  /** log p(token) at temperature 1. */
  logprob: number;
  /** True when this token ended the sequence (a stop id or stop string), not counting the `maxNewTokens` limit. */
  stopped: boolean;
}

/** Sampling settings plus what only the caller knows. */
export interface GenerateOptions extends SamplingParams {
  /** Token ids -> text, needed for `stopStrings`. */
  decode?: (ids: number[]) => string;
  /** Most attention-score floats a prefill chunk may hold (bounds memory on long prompts). @default 2^24 */
  maxScoreFloats?: number;
  /**
   * Most tokens (batch x chunk length) per prefill chunk (bounds activation memory and the chunk's own key/value
   * cache). @default 4096, fewer where 256 MiB of the model's keys and values hold fewer tokens
   */
  maxPrefillTokens?: number;
  /**
   * Most bytes the key/value cache of one batch may take: past it the prompts are sampled in consecutive groups (by
   * length) each under it, each prompt with the random stream it has in one batch. @default 1 GiB
   */
  maxCacheBytes?: number;
  /**
   * Sample with fused copies of the weights (q|k|v, gate|up; LoRA merged): fewer GEMMs, one more copy of the layer
   * weights in memory. @default true up to 100M parameters
   */
  fuseWeights?: boolean;
  /**
   * Decode with the fused kernels (src/model/decode-fast.ts; needs fused weights) when the backend has them: native
   * (one call per layer) and wasm (one call per step, prompts up to 256 tokens prefilled the same way).
   * `src/bench/scripts/decode-ab.ts` compares them with the op-by-op path, which false selects.
   * @default true
   */
  fastDecode?: boolean;
}

/** One sampled completion (the Engine's `Generation`). */
export interface Completion {
  tokens: number[];
  /** log p(token) at temperature 1, as a teacher-forced forward pass computes it. */
  logprobs: number[];
  finishReason: 'stop' | 'length';
}

/**
 * The model computed logits that are not finite (NaN or infinite: its weights overflow float32 in the forward pass,
 * e.g. a finite but huge weight, or a diverged run): no token is sampled from them. Names the model and the step.
 */
export class NonFiniteLogitsError extends RagenError {
  constructor(
    readonly model: string,
    /** The decode step (0 = the first sampled token). */
    readonly step: number,
    /** Which prompt. */
    readonly index: number,
    /** The position of the token being sampled (prompt length + step). */
    readonly position: number,
    logprob: number,
  ) {
    super(
      `Model \`${model}\` computed non-finite logits (log-prob ${logprob}) at decode step ${step} (position ${position} of prompt ${index}), so no token was sampled: its weights overflow float32 in the forward pass (a huge or diverged weight); check the checkpoint or use an earlier one.`,
    );
  }
}

/**
 * A prefill in place of the model's own, for prompts whose first pass is not the model's text path (a
 * vision-language model's prompts with their images): the decode steps that follow are the model's, batched.
 */
export interface PromptPrefill {
  /**
   * Fill row j of `cache` with prompt `prompts[j]` (the caller's index) right-aligned to end at slot `P`, set
   * `cache.length = P`, and return the logits (rows, V) of each prompt's last token.
   */
  prefill(prompts: readonly number[], cache: KVCache, P: number): Tensor;
  /**
   * Per prompt (the caller's index), how far its decode positions run past its length: the token after a prompt of
   * length L sits at position L + offset (Qwen2.5-VL's multimodal rotary delta).
   */
  positionOffsets: readonly number[];
}

/**
 * Sample completions of `prompts`; each sampled token comes with its log-prob at temperature 1. A model's suppressed
 * tokens (a VLM's vision tokens) are never sampled, and the log-probs are of the distribution without them. `first`
 * replaces the prompts' prefill (a VLM's prompts with images); the decode steps are the same.
 */
export function generate(
  model: Transformer,
  prompts: readonly (readonly number[])[],
  opts: GenerateOptions,
  first?: PromptPrefill,
): Completion[] {
  const steps = generateSteps(model, prompts, opts, first);
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

/**
 * `generate` that gives the event loop a turn after each decode step (a server flushes the streamed tokens and
 * reads new requests meanwhile). Same tokens as `generate`.
 */
export async function generateYielding(
  model: Transformer,
  prompts: readonly (readonly number[])[],
  opts: GenerateOptions,
  first?: PromptPrefill,
): Promise<Completion[]> {
  const steps = generateSteps(model, prompts, opts, first);
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

/** The decode loop of `generate`, paused (a `yield`) after each step's tokens are recorded. */
function* generateSteps(
  model: Transformer,
  prompts: readonly (readonly number[])[],
  opts: GenerateOptions,
  first: PromptPrefill | undefined,
): Generator<void, Completion[]> {
  validate(model, prompts, opts);
  const n = prompts.length;
  if (n === 0 || opts.maxNewTokens === 0)
    return prompts.map(() => ({ tokens: [], logprobs: [], finishReason: 'length' }));
  // each prompt's own stream, whichever group it is sampled in
  const master = new Rng(opts.seed);
  const rngs = prompts.map(() => new Rng(master.nextUint32()));
  // bf16 frozen weights have no fused (float32-packed) form: those models decode op by op
  const fused =
    !model.hasBf16Weights && (opts.fuseWeights ?? model.numParameters <= 1e8) ? fuseWeights(model) : undefined;
  try {
    const results: Completion[] = new Array<Completion>(n);
    for (const group of cacheGroups(model.config, prompts, opts)) {
      const sub = yield* generateGroup(
        model,
        group.map((i) => prompts[i]!),
        group.map((i) => rngs[i]!),
        group,
        fused,
        first,
        {
          ...opts,
          ...(opts.onTokens
            ? { onTokens: (s) => opts.onTokens!(s.map((t) => ({ ...t, index: group[t.index]! }))) }
            : {}),
          ...(opts.cancelled ? { cancelled: (j) => opts.cancelled!(group[j]!) } : {}),
        },
      );
      sub.forEach((r, j) => (results[group[j]!] = r));
    }
    return results;
  } finally {
    fused?.dispose();
  }
}

/**
 * The prompt indices in groups whose caches (rows x (longest prompt + maxNewTokens)) each fit `maxCacheBytes`: one
 * group when the whole batch fits, else consecutive runs of the prompts sorted by length, longest first.
 */
function cacheGroups(c: ModelConfig, prompts: readonly (readonly number[])[], opts: GenerateOptions): number[][] {
  const budget = opts.maxCacheBytes ?? 2 ** 30;
  const perToken = KVCache.bytesPerToken(c);
  // rows whose longest prompt is `longest` fit when their cache does
  const fits = (rows: number, longest: number) => rows * (longest + opts.maxNewTokens) * perToken <= budget;
  const order = prompts.map((_, i) => i).sort((a, b) => prompts[b]!.length - prompts[a]!.length || a - b);
  if (fits(order.length, prompts[order[0]!]!.length)) return [prompts.map((_, i) => i)];
  const groups: number[][] = [];
  for (let j0 = 0; j0 < order.length;) {
    // longest first: a group's first prompt sets its capacity; one prompt per group at least, whatever it takes
    let end = j0 + 1;
    while (end < order.length && fits(end + 1 - j0, prompts[order[j0]!]!.length)) end++;
    groups.push(order.slice(j0, end).sort((a, b) => a - b));
    j0 = end;
  }
  return groups;
}

/** One batch under the cache budget: `index[j]` is prompt j's index in the caller's batch (for error messages). */
function* generateGroup(
  model: Transformer,
  prompts: readonly (readonly number[])[],
  rngs: readonly Rng[],
  index: readonly number[],
  fused: FusedWeights | undefined,
  first: PromptPrefill | undefined,
  opts: GenerateOptions,
): Generator<void, Completion[]> {
  const c = model.config;
  const V = c.vocabSize;
  const n = prompts.length;
  const results: Completion[] = prompts.map(() => ({ tokens: [], logprobs: [], finishReason: 'length' }));
  const P = Math.max(...prompts.map((p) => p.length));
  const capacity = P + opts.maxNewTokens;
  const pads = prompts.map((p) => P - p.length);
  const shift = prompts.map((_, j) => first?.positionOffsets[index[j]!] ?? 0);
  const sampler = new Sampler(V);
  const stopIds = new Set(opts.stopTokenIds ?? []);
  const stopStrings = (opts.stopStrings ?? []).filter((s) => s.length > 0);
  const window = Math.max(0, ...stopStrings.map((s) => s.length)) + 4;
  const settings = { topP: opts.topP ?? 1, topK: opts.topK ?? 0 };
  const suppressed = model.suppressedTokens;

  let cache = new KVCache(c, n, capacity);
  // cache row -> prompt index: longest prompts first, so prefill groups pad little
  let rows = prompts.map((_, i) => i).sort((a, b) => prompts[b]!.length - prompts[a]!.length || a - b);
  let done = new Array<boolean>(n).fill(false);
  let keyValid = maskFor(rows, pads, capacity);
  let fast: FastDecoder | undefined;
  let logits: Tensor | null = null; // the next distributions when the op-by-op path computed them
  try {
    if (fused && (opts.fastDecode ?? true) && hasFastDecode(model.backend))
      fast = new FastDecoder(model, fused, n, capacity);
    const prefillOpts = {
      fused,
      maxTokens: opts.maxPrefillTokens ?? Math.max(1, Math.min(4096, Math.floor(2 ** 28 / KVCache.bytesPerToken(c)))),
      maxScoreFloats: opts.maxScoreFloats ?? 2 ** 24,
    };
    if (first)
      logits = first.prefill(
        rows.map((r) => index[r]!),
        cache,
        P,
      );
    else if (fast?.canPrefill(P))
      fast.prefill(
        rows.map((r) => prompts[r]!),
        cache,
        keyValid,
        opts.temperature,
      );
    else logits = prefill(model, prompts, rows, cache, prefillOpts);
    for (let step = 0; step < opts.maxNewTokens; step++) {
      const B = rows.length;
      const rowRngs = rows.map((r) => rngs[r]!);
      let tokens: Int32Array, lps: Float32Array;
      if (logits) {
        // A VLM's vision tokens are never sampled; the log-probs are those of the distribution without them.
        const z: Tensor = suppressed ? noGrad(() => tidy(() => suppressLogits(logits!, suppressed))) : logits;
        tokens = pick(z, B, opts.temperature, sampler, settings, rowRngs, V);
        lps = readOut(() => logprobOfTarget(z, tokens));
        if (z !== logits) z.dispose();
        logits.dispose();
        logits = null;
      } else {
        ({ tokens, logprobs: lps } = fast!.sample(sampler, settings, rowRngs));
      }
      const sampled: SampledToken[] | undefined = opts.onTokens ? [] : undefined;
      for (let j = 0; j < B; j++) {
        const i = rows[j]!;
        if (done[j]) continue;
        const g = results[i]!;
        // log p = z[token] - logsumexp(z) is finite exactly when the row's logits are (a NaN or +Inf anywhere makes
        // the logsumexp NaN): one test per row instead of a pass over the V logits.
        if (!Number.isFinite(lps[j]!))
          throw new NonFiniteLogitsError(model.source, step, index[i]!, prompts[i]!.length + step, lps[j]!);
        g.tokens.push(tokens[j]!);
        g.logprobs.push(lps[j]!);
        if (
          stopIds.has(tokens[j]!) ||
          (stopStrings.length > 0 && hitsStop(opts.decode!, g.tokens, stopStrings, window))
        ) {
          g.finishReason = 'stop';
          done[j] = true;
        }
        sampled?.push({ index: i, token: tokens[j]!, logprob: lps[j]!, stopped: done[j]! });
      }
      if (sampled) opts.onTokens!(sampled);
      if (opts.cancelled) for (let j = 0; j < B; j++) if (!done[j] && opts.cancelled(rows[j]!)) done[j] = true;
      yield;
      if (step === opts.maxNewTokens - 1) break;
      const finished = done.filter(Boolean).length;
      if (finished === B) break;
      if (finished >= Math.max(1, B / 8)) {
        const keepRows = rows.map((_, j) => j).filter((j) => !done[j]);
        cache = cache.compact(keepRows);
        for (let j = 0; j < keepRows.length; j++) tokens[j] = tokens[keepRows[j]!]!;
        rows = keepRows.map((j) => rows[j]!);
        done = rows.map(() => false);
        keyValid = maskFor(rows, pads, capacity);
      }
      const Bn = rows.length;
      const ids = tokens.slice(0, Bn);
      const positions = Int32Array.from(rows, (r) => cache.length - pads[r]! + shift[r]!);
      if (fast) fast.step(ids, Bn, cache, positions, keyValid, opts.temperature);
      else
        logits = noGrad(() =>
          tidy(() => lastLogits(model, model.hidden(ids, Bn, 1, { cache, positions, keyValid, fused }), Bn, 1)),
        );
    }
  } finally {
    logits?.dispose();
    cache.dispose();
    fast?.dispose();
  }
  return results;
}

/** Tokens for each row: greedy, or sampled from softmax(logits / temperature) after top-k / top-p. */
function pick(
  logits: Tensor,
  B: number,
  temperature: number,
  sampler: Sampler,
  settings: { topP: number; topK: number },
  rngs: Rng[],
  V: number,
): Int32Array {
  const tokens = new Int32Array(B);
  if (temperature === 0) {
    const z = logits.toFloat32Array();
    for (let b = 0; b < B; b++) tokens[b] = argmax(z, b * V, V);
    return tokens;
  }
  const probs = readOut(() => softmax(temperature === 1 ? logits : affine(logits, 1 / temperature)));
  for (let b = 0; b < B; b++) tokens[b] = sampler.pick(probs, b * V, settings, rngs[b]!, true);
  return tokens;
}

/** The data of a tensor computed without a graph; its temporaries are freed. */
function readOut(fn: () => Tensor): Float32Array {
  let out: Float32Array | null = null;
  noGrad(() => tidy(() => void (out = fn().toFloat32Array()))); // returns nothing: tidy need not scan the array
  return out!;
}

/** (B, capacity) flags: slot s of row j is a real token when s >= that prompt's left padding; none without padding. */
function maskFor(rows: readonly number[], pads: readonly number[], capacity: number): Int32Array | undefined {
  if (rows.every((r) => pads[r] === 0)) return undefined;
  const m = new Int32Array(rows.length * capacity);
  rows.forEach((r, j) => m.fill(1, j * capacity + pads[r]!, (j + 1) * capacity));
  return m;
}

function hitsStop(
  decode: (ids: number[]) => string,
  tokens: number[],
  stops: readonly string[],
  window: number,
): boolean {
  const text = decode(tokens.slice(-window));
  return stops.some((s) => text.includes(s));
}

function validate(model: Transformer, prompts: readonly (readonly number[])[], o: GenerateOptions): void {
  refuseImages(o, model.source);
  if (!Number.isInteger(o.maxNewTokens) || o.maxNewTokens < 0)
    throw new ConfigError(`maxNewTokens must be a non-negative integer, got ${o.maxNewTokens}`);
  if (!(o.temperature >= 0)) throw new ConfigError(`temperature must be >= 0 (0 = greedy), got ${o.temperature}`);
  if (o.topP !== undefined && !(o.topP > 0 && o.topP <= 1))
    throw new ConfigError(`topP must be in (0, 1], got ${o.topP}`);
  if (o.topK !== undefined && !(Number.isInteger(o.topK) && o.topK >= 0))
    throw new ConfigError(`topK must be a non-negative integer (0 = off), got ${o.topK}`);
  if ((o.stopStrings?.length ?? 0) > 0 && !o.decode)
    throw new ConfigError('stopStrings need a tokenizer: pass `decode` (or give the engine a tokenizer)');
  const V = model.config.vocabSize;
  const P = model.config.maxPositionEmbeddings;
  prompts.forEach((p, i) => {
    if (p.length === 0) throw new ConfigError(`prompt ${i} is empty; every prompt needs at least one token`);
    if (p.length + o.maxNewTokens > P)
      throw new ConfigError(contextPastPositions(p.length, o.maxNewTokens, P, `prompt ${i}`));
    for (const id of p)
      if (!(Number.isInteger(id) && id >= 0 && id < V))
        throw new ConfigError(`prompt ${i} holds token id ${id}, outside the vocabulary [0, ${V})`);
  });
}

/** Why a prompt plus its generation cannot run: past the model's position table (max_position_embeddings). */
export function contextPastPositions(
  promptTokens: number,
  maxNewTokens: number,
  positions: number,
  what = 'the prompt',
): string {
  return `${what} has ${promptTokens} tokens and may generate ${maxNewTokens} more (${promptTokens + maxNewTokens} in all), past the model's ${positions} positions (its max_position_embeddings); shorten the prompt or generate fewer tokens, or use a model with a longer context.`;
}
