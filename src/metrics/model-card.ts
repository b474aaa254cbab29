// The model card (README.md) `ragen push` writes beside a checkpoint's weights: the Hub's front matter, what was
// trained on what, the run's validation success before and at the pushed step (read from its metrics.jsonl), how to
// use the model, and the run's whole config. Every number in it comes from the run's files.

/** What the card says; the caller reads it from the run. */
export interface ModelCardInput {
  /** `owner/name` on the Hub. */
  repo: string;
  /** The run directory's name (its folder under runs/). */
  runName: string;
  /** The checkpoint's step. */
  step: number;
  /** The run's `model.path` as configured (a shipped model, a folder or a Hub id). */
  baseModel: string;
  /** The run's advantage estimator (`algo.advEstimator`). */
  algorithm: string;
  /** The environments of the run's training tags. */
  trainEnvs: string[];
  /** The LoRA rank when the run trained adapters, else undefined (full fine-tuning). */
  loraRank?: number;
  /** The run's config.yaml, as saved. */
  configYaml: string;
  /** The run's metrics.jsonl rows up to `step`. */
  metrics: Record<string, unknown>[];
  /** The ragen-ts version that writes the card. */
  version: string;
}

const HUB_ID = /^[A-Za-z0-9][\w.-]*\/[A-Za-z0-9][\w.-]*$/;

/** `val/<env>/success` of each validation row: step -> env -> success. */
function validations(rows: Record<string, unknown>[]): Map<number, Map<string, number>> {
  const out = new Map<number, Map<string, number>>();
  for (const row of rows) {
    if (typeof row.step !== 'number') continue;
    for (const [key, value] of Object.entries(row)) {
      const m = /^val\/(.+)\/success$/.exec(key);
      if (!m || typeof value !== 'number') continue;
      const envs = out.get(row.step) ?? new Map<string, number>();
      envs.set(m[1]!, value);
      out.set(row.step, envs);
    }
  }
  return out;
}

const pct = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '-' : `${(100 * x).toFixed(1)}%`);

/** The results section: validation success at the run's first and last validation up to the pushed step. */
function resultsSection(input: ModelCardInput): string {
  const vals = validations(input.metrics);
  const steps = [...vals.keys()].filter((s) => s <= input.step).sort((a, b) => a - b);
  if (steps.length === 0)
    return 'The run validated nothing up to this step (`trainer.valEvery`), so there are no results to show.\n';
  const first = steps[0]!;
  const last = steps[steps.length - 1]!;
  const envs = [...new Set(steps.flatMap((s) => [...vals.get(s)!.keys()]))].sort();
  const when = first === last ? `at step ${first}` : `at step ${first} and at step ${last}`;
  const lines = [
    `Validation success of the run (sampling as configured in \`generation.val\`), ${when}:`,
    '',
    first === last ? `| env | step ${first} |` : `| env | step ${first} | step ${last} |`,
    first === last ? '|---|---:|' : '|---|---:|---:|',
    ...envs.map((env) =>
      first === last
        ? `| ${env} | ${pct(vals.get(first)!.get(env))} |`
        : `| ${env} | ${pct(vals.get(first)!.get(env))} | ${pct(vals.get(last)!.get(env))} |`,
    ),
  ];
  return `${lines.join('\n')}\n`;
}

/** The README.md of a pushed checkpoint. */
export function modelCard(input: ModelCardInput): string {
  const front = [
    '---',
    'library_name: transformers',
    'pipeline_tag: text-generation',
    'tags:',
    '- ragen-ts',
    '- reinforcement-learning',
    '- agent',
    ...input.trainEnvs.map((env) => `- ${env}`),
    ...(HUB_ID.test(input.baseModel) ? [`base_model: ${input.baseModel}`] : []),
    '---',
  ];
  const name = input.repo.split('/')[1]!;
  const adapters = input.loraRank !== undefined ? ` Trained with LoRA adapters of rank ${input.loraRank}.` : '';
  const envList = input.trainEnvs.map((e) => `\`${e}\``).join(', ');
  return `${front.join('\n')}

# ${name}

An agent trained with [ragen-ts](https://www.npmjs.com/package/ragen-ts) by multi-turn reinforcement learning
(StarPO, advantage estimator \`${input.algorithm}\`) on ${envList}, from \`${input.baseModel}\`: step ${input.step} of
the run \`${input.runName}\`.${adapters}

## Results

${resultsSection(input)}
## Use

With ragen-ts (the same prompts, parsing and environments as in training):

\`\`\`bash
npx ragen eval --model ${input.repo} --env ${input.trainEnvs[0] ?? '<env>'}
npx ragen serve ${input.repo}      # an OpenAI-compatible server
\`\`\`

With transformers, as any causal language model with a chat template:

\`\`\`python
from transformers import AutoModelForCausalLM, AutoTokenizer

tokenizer = AutoTokenizer.from_pretrained("${input.repo}")
model = AutoModelForCausalLM.from_pretrained("${input.repo}")
\`\`\`

## Training config

The run's \`config.yaml\` (ragen-ts ${input.version}, also uploaded as \`ragen/config.yaml\` with the run's
\`ragen/metrics.jsonl\`); \`npx ragen train --config config.yaml\` repeats the run where its \`model.path\` exists.

<details><summary>config.yaml</summary>

\`\`\`yaml
${input.configYaml.trimEnd()}
\`\`\`

</details>
`;
}
