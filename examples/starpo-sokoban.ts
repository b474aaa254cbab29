// StarPO on Sokoban in one file, cleanrl-style: rollouts with env groups, the rollout filter, advantages (GRPO or
// GAE with a critic), a PPO actor update through the engine's backward, AdamW steps, success printed each step.
// Built only from the package's public API; `ragen train` (src/train) is the full trainer with checkpoints,
// validation schedules, early stops and metrics files. In your own project import from 'ragen-ts'.
//
//   npx tsx examples/starpo-sokoban.ts                        # PPO with GAE, 60 steps on models/ragen-tiny
//   npx tsx examples/starpo-sokoban.ts --advantage grpo --steps 20
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import {
  actorLoss,
  agentConfig,
  clippedValueLoss,
  collate,
  computeAdvantage,
  enginePolicy,
  EnvGroups,
  filterRollouts,
  LocalEngine,
  loadTokenizer,
  rollout,
  type AgentConfig,
  type Episode,
  type TokenBatch,
  type Tokenizer,
  type TrainableEngine,
  type TrainingSample,
} from '../src/index.js';

/** Every knob of the example, with the defaults of the `sokoban-ppo` preset where it has one. */
export interface Args {
  /** A model folder in Hugging Face layout (config.json, model.safetensors, tokenizer.json). */
  model: string;
  env: string;
  steps: number;
  /** Groups per step (one seed each) and envs per group. */
  groups: number;
  groupSize: number;
  maxTurns: number;
  maxNewTokens: number;
  advantage: 'grpo' | 'gae';
  gamma: number;
  lambda: number;
  /** Rollout filter: keep the groups holding this much of the softmax mass of in-group reward std (1 keeps all). */
  filterTopP: number;
  actorLr: number;
  criticLr: number;
  clipLow: number;
  clipHigh: number;
  entropyCoeff: number;
  miniBatchSize: number;
  epochs: number;
  maxGradNorm: number;
  temperature: number;
  /** Validation seeds played before and after training at temperature 0.5 (0: no validation). */
  valEpisodes: number;
  seed: number;
  /** Print one line per step. */
  verbose: boolean;
}

export const DEFAULTS: Args = {
  model: 'models/ragen-tiny',
  env: 'SimpleSokoban',
  steps: 60,
  groups: 8,
  groupSize: 8,
  maxTurns: 5,
  maxNewTokens: 64,
  advantage: 'gae',
  gamma: 1,
  lambda: 1,
  filterTopP: 0.9,
  actorLr: 1e-4,
  criticLr: 3e-4,
  clipLow: 0.2,
  clipHigh: 0.28,
  entropyCoeff: 0.001,
  miniBatchSize: 32,
  epochs: 1,
  maxGradNorm: 1,
  temperature: 1,
  valEpisodes: 64,
  seed: 10000,
  verbose: true,
};

/** What one training step measured. */
export interface StepLog {
  step: number;
  success: number;
  rewardMean: number;
  keptGroups: number;
  pgLoss: number;
  gradNorm: number;
  vfLoss: number | null;
}

// ---------------------------------------------------------------------------------------------------------------
// The engine seam: `forward` and `backward` take a padded token batch (`collate`'s TokenBatch) and answer (B, T)
// arrays in which entry (b, t) describes token t, the layout the algorithms use; `backward`'s callback returns
// d loss / d output in that same layout, and the engine back-propagates it. No conversions on either side.
// ---------------------------------------------------------------------------------------------------------------

/** `rows` of the step's samples as their own token batch, as wide as the step's (so (rows, T) arrays line up). */
const batchOf = (samples: readonly TrainingSample[], rows: readonly number[], padId: number, T: number): TokenBatch =>
  collate(
    rows.map((r) => samples[r]!),
    padId,
    T,
  );

// ---------------------------------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------------------------------

const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((a, x) => a + x, 0) / xs.length : 0);
const successRate = (episodes: readonly Episode[]) => mean(episodes.map((e) => (e.success ? 1 : 0)));

/** Copy `rows` of a (B, T) array. */
function take(x: ArrayLike<number>, rows: readonly number[], T: number): Float64Array {
  const out = new Float64Array(rows.length * T);
  rows.forEach((r, i) => {
    for (let t = 0; t < T; t++) out[i * T + t] = x[r * T + t]!;
  });
  return out;
}

/** Mini-batches of row indices, shuffled by a seeded permutation. */
function miniBatches(B: number, size: number, seed: number): number[][] {
  const order = Array.from({ length: B }, (_, i) => i);
  let s = seed >>> 0;
  for (let i = B - 1; i > 0; i--) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0; // an LCG is plenty for a shuffle
    const j = s % (i + 1);
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return Array.from({ length: Math.ceil(B / size) }, (_, k) => order.slice(k * size, (k + 1) * size));
}

/** Success rate on fixed validation seeds (one env per seed, temperature 0.5), sampled as `ragen train` validates. */
async function validate(
  engine: TrainableEngine,
  tokenizer: Tokenizer,
  agent: AgentConfig,
  args: Args,
): Promise<number> {
  const groups = new EnvGroups({
    tags: [{ env: args.env, nGroups: args.valEpisodes }],
    groupSize: 1,
    mode: 'val',
    seed: 123,
  });
  const batch = await rollout({
    groups,
    policy: enginePolicy(engine, tokenizer, agent, { temperature: 0.5, seed: 123 }),
    tokenizer,
    agent,
  });
  await groups.close();
  return successRate(batch.episodes);
}

// ---------------------------------------------------------------------------------------------------------------
// The StarPO loop
// ---------------------------------------------------------------------------------------------------------------

/** Train `args.steps` StarPO steps; returns each step's log and validation success before / after (null: none). */
export async function starpo(
  args: Args,
): Promise<{ steps: StepLog[]; valBefore: number | null; valAfter: number | null }> {
  const print = (line: string) => args.verbose && console.log(line);
  const tokenizer = loadTokenizer(args.model);
  const engine = await LocalEngine.fromPretrained(args.model, {
    critic: args.advantage === 'gae' ? 'separate' : null,
    seed: args.seed,
  });
  // Each turn sees only its own state (the envs are fully observed), one training sample per turn: short sequences.
  const agent = agentConfig({
    maxTurns: args.maxTurns,
    maxNewTokens: args.maxNewTokens,
    maxContextTokens: 1024,
    contextWindowMode: 'limited_multi_turn',
    maxContextWindow: 1,
  });
  const groups = new EnvGroups({
    tags: [{ env: args.env, nGroups: args.groups }],
    groupSize: args.groupSize,
    mode: 'train',
    seed: args.seed,
  });
  const valBefore = args.valEpisodes > 0 ? await validate(engine, tokenizer, agent, args) : null;
  if (valBefore !== null) print(`validation success before training: ${(100 * valBefore).toFixed(1)}%`);
  const logs: StepLog[] = [];

  for (let step = 1; step <= args.steps; step++) {
    const t0 = performance.now();
    // 1. Rollout: every group's envs start from one seed; the policy samples with a fresh seed each step.
    const policy = enginePolicy(engine, tokenizer, agent, { temperature: args.temperature, seed: args.seed + step });
    const batch = await rollout({ groups, policy, tokenizer, agent });
    const episodes = batch.episodes;

    // 2. StarPO's rollout filter: keep the groups whose rewards disagree most (their in-group std is the signal).
    const filter = filterRollouts(
      { rewards: episodes.map((e) => e.score), groupIds: episodes.map((e) => e.group) },
      {
        metric: 'reward_std',
        strategy: 'top_p',
        value: args.filterTopP,
        topPMode: 'softmax',
        type: 'largest',
        includeZero: true,
        selectionEps: 0.01,
      },
    );
    const kept = new Set(filter.keptIndices.map((i) => episodes[i]!.index));
    const samples = batch.samples.filter((s) => kept.has(s.episode));
    const log: StepLog = {
      step,
      success: successRate(episodes),
      rewardMean: mean(episodes.map((e) => e.score)),
      keptGroups: filter.stats.keptCount,
      pgLoss: NaN,
      gradNorm: NaN,
      vfLoss: null,
    };
    if (samples.length > 0) {
      // 3. One padded (B, T) batch: ids, loss mask (sampled tokens), the sampler's log-probs, token rewards.
      const tokens = collate(samples, tokenizer.padTokenId);
      const { B, T } = tokens;

      // 4. Advantages: GRPO normalises each episode's score within its group; GAE bootstraps from the critic.
      const values = args.advantage === 'gae' ? (await engine.forward(tokens, { role: 'critic' })).values : undefined;
      const adv = computeAdvantage(
        {
          rewards: tokens.rewards,
          mask: tokens.lossMask,
          B,
          T,
          groupIds: tokens.groupIds,
          episodeIds: tokens.episodeIds,
          ...(values ? { values } : {}),
        },
        { advEstimator: args.advantage, gamma: args.gamma, lambda: args.lambda, gammaTurn: 1 },
      );

      // 5. PPO: epochs x mini-batches, one AdamW step each. log pi_old = the sampler's log-probs (same weights).
      const pg: number[] = [];
      const norms: number[] = [];
      const vf: number[] = [];
      for (let epoch = 0; epoch < args.epochs; epoch++) {
        for (const rows of miniBatches(B, args.miniBatchSize, args.seed * 31 + step * 7 + epoch)) {
          const mb = batchOf(samples, rows, tokenizer.padTokenId, T);
          if (values) {
            await engine.backward(mb, { role: 'critic' }, (out) => {
              const r = clippedValueLoss({
                values: out.values!,
                oldValues: take(values, rows, T),
                returns: take(adv.returns, rows, T),
                mask: mb.lossMask,
                B: mb.B,
                T,
                lossAgg: 'token-mean',
                valueClip: 0.5,
              });
              vf.push(r.loss);
              return { values: r.grad.values };
            });
            await engine.optimizerStep('critic', { lr: args.criticLr, maxGradNorm: args.maxGradNorm });
          }
          await engine.backward(mb, { role: 'policy', entropy: true }, (out) => {
            const r = actorLoss(
              {
                logprobs: out.logprobs,
                entropy: out.entropy!,
                oldLogprobs: mb.oldLogprobs,
                advantages: take(adv.advantages, rows, T),
                mask: mb.lossMask,
                B: mb.B,
                T,
              },
              {
                lossAgg: 'token-mean',
                clipRatioLow: args.clipLow,
                clipRatioHigh: args.clipHigh,
                clipRatioC: 3,
                entropyCoeff: args.entropyCoeff,
                klCoef: 0,
                klEstimator: 'k1',
              },
            );
            pg.push(r.stats.pgLoss);
            return { logprobs: r.grad.logprobs, ...(r.grad.entropy ? { entropy: r.grad.entropy } : {}) };
          });
          const opt = await engine.optimizerStep('policy', { lr: args.actorLr, maxGradNorm: args.maxGradNorm });
          norms.push(opt.gradNorm);
        }
      }
      Object.assign(log, { pgLoss: mean(pg), gradNorm: mean(norms), vfLoss: values ? mean(vf) : null });
    }
    logs.push(log);
    print(
      `step ${step}/${args.steps}  success ${(100 * log.success).toFixed(1)}%  reward ${log.rewardMean.toFixed(3)}  kept ${log.keptGroups}/${args.groups} groups  ` +
        `pg_loss ${log.pgLoss.toFixed(4)}  grad_norm ${log.gradNorm.toFixed(3)}${log.vfLoss !== null ? `  vf_loss ${log.vfLoss.toFixed(4)}` : ''}  ${((performance.now() - t0) / 1000).toFixed(1)}s`,
    );
  }

  const valAfter = args.valEpisodes > 0 ? await validate(engine, tokenizer, agent, args) : null;
  if (valAfter !== null) print(`validation success after training: ${(100 * valAfter).toFixed(1)}%`);
  await groups.close();
  engine.dispose();
  return { steps: logs, valBefore, valAfter };
}

/** `--key value` flags for every field of Args (numbers parsed, `--advantage grpo|gae`). */
export function parseCommandLine(argv: readonly string[]): Args {
  const options = Object.fromEntries(Object.keys(DEFAULTS).map((k) => [k, { type: 'string' as const }]));
  const { values } = parseArgs({ args: [...argv], options, allowPositionals: false });
  const args: Args = { ...DEFAULTS };
  for (const [key, raw] of Object.entries(values)) {
    const k = key as keyof Args;
    const kind = typeof DEFAULTS[k];
    const v = kind === 'number' ? Number(raw) : kind === 'boolean' ? raw === 'true' : raw;
    if (kind === 'number' && !Number.isFinite(v)) throw new Error(`--${key} takes a number, got "${raw}".`);
    (args as unknown as Record<string, unknown>)[k] = v;
  }
  if (args.advantage !== 'grpo' && args.advantage !== 'gae')
    throw new Error(`--advantage takes grpo or gae, got "${args.advantage}".`);
  return args;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await starpo(parseCommandLine(process.argv.slice(2)));
}
