// `ragen bench learning --runs gateway`: the Vercel AI SDK guess-number agent trained through the gateway beside the
// same task in the built-in loop (3 training seeds each), and what one chat call costs through the gateway;
// `--runs frameworks` adds the same agent written with the OpenAI Agents SDK and with LangChain.js.
import { Gateway } from '../../gateway/index.js';
import { localServeTarget } from '../../serve/index.js';

/** Training seeds of the comparison (`seed.train`; validation seeds stay the presets'). */
export const GATEWAY_SEEDS = [10000, 20000, 30000];

/**
 * What every run of the comparison validates on: 128 fixed seeds (the presets' 64 and the next 64; one episode is 0.8
 * points, where at 64 the seeds' changes were 0-2 episodes of 1.6 points), before the first step and after the 20th
 * only (a validation at step 10 cost as much as the extra 64 episodes, and the table does not read it).
 */
export const GATEWAY_VAL = ['env.val.0.groups=128', 'trainer.valEvery=20'];

/** The comparison's runs: the agent program through the gateway, then the built-in env, per seed. */
export const GATEWAY_RUNS: { name: string; presets: string[]; overrides: string[] }[] = GATEWAY_SEEDS.flatMap(
  (seed, i) => [
    {
      name: `guessnumber-gateway-s${i + 1}`,
      presets: ['guessnumber-agent-ppo'],
      overrides: [`seed.train=${seed}`, ...GATEWAY_VAL],
    },
    {
      name: `guessnumber-builtin-s${i + 1}`,
      presets: ['guessnumber-ppo'],
      overrides: [`seed.train=${seed}`, ...GATEWAY_VAL],
    },
  ],
);

/**
 * `--runs frameworks`: the same guess-number agent written with each framework (the AI SDK's runs are GATEWAY_RUNS'),
 * beside the built-in loop, per seed: does the framework a program is written with change what training does?
 */
export const FRAMEWORK_RUNS: { name: string; presets: string[]; overrides: string[] }[] = GATEWAY_SEEDS.flatMap(
  (seed, i) => [
    ...GATEWAY_RUNS.slice(2 * i, 2 * i + 2),
    {
      name: `guessnumber-openai-agents-s${i + 1}`,
      presets: ['guessnumber-agent-openai-agents-ppo'],
      overrides: [`seed.train=${seed}`, ...GATEWAY_VAL],
    },
    {
      name: `guessnumber-langchain-s${i + 1}`,
      presets: ['guessnumber-agent-langchain-ppo'],
      overrides: [`seed.train=${seed}`, ...GATEWAY_VAL],
    },
  ],
);

/** The comparison's paths, as run names spell them (`guessnumber-<path>-s<seed>`), and their labels in the table. */
const PATHS = {
  gateway: 'AI SDK agent, gateway',
  'openai-agents': 'OpenAI Agents SDK agent, gateway',
  langchain: 'LangChain.js agent, gateway',
  builtin: 'built-in loop',
} as const;

/**
 * Per-call cost of the gateway: the same greedy call through HTTP + template + recording, and on the engine directly.
 */
export interface GatewayOverhead {
  calls: number;
  promptTokens: number;
  completionTokens: number;
  engineMs: number;
  gatewayMs: number;
  overheadMs: number;
}

/**
 * Time `calls` chat calls through a gateway over the model in `modelDir` (the agent's first call: its task and the
 * `guess` tool, greedy) against `engine.generate` on the prompt ids the gateway recorded, in interleaved halves so
 * a machine whose load changes biases both alike (src/bench/scripts/gateway-overhead.ts's method).
 */
export async function measureGatewayOverhead(modelDir: string, calls = 20, maxTokens = 64): Promise<GatewayOverhead> {
  const target = await localServeTarget(modelDir, (d) => d, { name: 'policy' });
  const gateway = new Gateway({ ...target, batchWindowMs: 0 }); // no idle timeout: a half of engine calls may outlast 5 s
  const base = await gateway.listen(0);
  try {
    let { baseUrl } = gateway.open('overhead', { maxCalls: 1e9 });
    const body = JSON.stringify({
      model: 'policy',
      max_tokens: maxTokens,
      temperature: 0,
      messages: [{ role: 'user', content: 'Guess the hidden number between 1 and 16. You have 5 guesses.' }],
      tools: [
        {
          type: 'function',
          function: {
            name: 'guess',
            description: 'Guess the hidden number; answers higher, lower or correct.',
            parameters: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] },
          },
        },
      ],
      tool_choice: 'auto',
    });
    const viaGateway = async (): Promise<void> => {
      const res = await fetch(`${baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body,
      });
      if (!res.ok) throw new Error(`gateway call failed at ${base}: ${res.status} ${await res.text()}`);
      await res.json();
    };
    await viaGateway();
    const first = gateway.finish('overhead').calls[0]!;
    ({ baseUrl } = gateway.open('overhead', { maxCalls: 1e9 })); // a new episode: a new secret in its URL
    const direct = async (): Promise<void> => {
      await target.engine.generate([first.promptIds], {
        maxNewTokens: maxTokens,
        temperature: 0,
        topP: 1,
        topK: 0,
        stopTokenIds: [target.tokenizer.eosTokenId],
        seed: 0,
      });
    };
    const msPer = async (f: () => Promise<void>, n: number): Promise<number> => {
      const t = performance.now();
      for (let i = 0; i < n; i++) await f();
      return (performance.now() - t) / n;
    };
    for (let i = 0; i < 2; i++) await Promise.all([direct(), viaGateway()]); // warm-up
    const half = Math.max(1, Math.floor(calls / 2));
    const d1 = await msPer(direct, half);
    const g1 = await msPer(viaGateway, half);
    const d2 = await msPer(direct, half);
    const g2 = await msPer(viaGateway, half);
    const engineMs = (d1 + d2) / 2;
    const gatewayMs = (g1 + g2) / 2;
    return {
      calls: 2 * half,
      promptTokens: first.promptIds.length,
      completionTokens: first.completionIds.length,
      engineMs,
      gatewayMs,
      overheadMs: gatewayMs - engineMs,
    };
  } finally {
    await gateway.close();
    target.dispose();
  }
}

/** What the comparison's markdown needs of each run (bench-learning's LearningRunResult). */
interface ComparedRun {
  name: string;
  before: Record<string, number>;
  after: Record<string, number>;
  stepsDone: number;
  episodesPerS: number;
  meanStepSeconds: number;
}

const pct = (x: number | undefined) => (x === undefined || Number.isNaN(x) ? '-' : `${(100 * x).toFixed(1)}%`);
const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : Number.NaN);

/** The gateway-vs-built-in table: one row per run, a mean row per path, and the per-call overhead. */
export function gatewayMarkdown(runs: readonly ComparedRun[], overhead: GatewayOverhead | undefined): string[] {
  const rows = runs.filter((r) => /^guessnumber-(gateway|openai-agents|langchain|builtin)-s\d+$/.test(r.name));
  if (rows.length === 0) return [];
  const value = (rec: Record<string, number>) => Object.values(rec)[0];
  const line = (label: string, rs: readonly ComparedRun[]) => {
    const b = mean(rs.map((r) => value(r.before)!).filter((x) => x !== undefined));
    const a = mean(rs.map((r) => value(r.after)!).filter((x) => x !== undefined));
    return `| ${label} | ${rs.map((r) => r.stepsDone).join('/')} | ${pct(b)} | ${pct(a)} | ${Number.isNaN(a - b) ? '-' : `${a - b >= 0 ? '+' : ''}${(100 * (a - b)).toFixed(1)} pts`} | ${mean(rs.map((r) => r.episodesPerS)).toFixed(2)} | ${mean(rs.map((r) => r.meanStepSeconds)).toFixed(1)} |`;
  };
  const paths = (Object.keys(PATHS) as (keyof typeof PATHS)[]).map(
    (p) => [PATHS[p], rows.filter((r) => r.name.startsWith(`guessnumber-${p}-`))] as const,
  );
  return [
    '',
    '### Agents through the gateway beside the built-in loop (GuessNumber)',
    '',
    '| run | steps | val success before | after | change | train episodes/s | s/step |',
    '|---|---:|---:|---:|---:|---:|---:|',
    ...rows.map((r) => line(r.name, [r])),
    ...paths.filter(([, rs]) => rs.length > 1).map(([p, rs]) => line(`**${p}, mean of ${rs.length} seeds**`, rs)),
    '',
    overhead
      ? `Per chat call (greedy, ${overhead.promptTokens}-token prompt with the tools block, ${overhead.completionTokens} tokens out, ${overhead.calls} calls each): engine ${overhead.engineMs.toFixed(1)} ms, through the gateway ${overhead.gatewayMs.toFixed(1)} ms, overhead ${overhead.overheadMs.toFixed(1)} ms.`
      : 'Per-call overhead: not measured.',
  ];
}
