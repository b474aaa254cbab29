// Train the tiny tokenizer on transcripts of every registered env and write it to a model folder.
// Usage: npx tsx scripts/train-tokenizer.ts [--out models/tokenizer-tiny] [--vocab 1024] [--episodes 24]
import '../src/envs/index.js'; // the built-in environments
import { listEnvs, envSpec } from '../src/env/index.js';
import {
  byteTokenizer,
  CHATML_TEMPLATE,
  loadTokenizer,
  saveTokenizerFiles,
  trainTinyTokenizer,
  ChatTemplate,
} from '../src/tokenizer/index.js';
import {
  EnvGroups,
  agentConfig,
  episodeMessages,
  oraclePolicy,
  randomPolicy,
  rollout,
  type AgentConfig,
} from '../src/agent/index.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
}

const out = arg('out', 'models/tokenizer-tiny');
const vocabSize = Number(arg('vocab', '1024'));
const episodes = Number(arg('episodes', '24'));
const tok = byteTokenizer();
const chatml = new ChatTemplate(CHATML_TEMPLATE, {});
const texts: string[] = [];
const variants: Partial<AgentConfig>[] = [
  {},
  { enableThink: false },
  { contextWindowMode: 'single_turn', maxContextWindow: 3 },
];

for (const { id } of listEnvs()) {
  const spec = envSpec(id);
  for (const variant of variants) {
    const cfg = agentConfig({ maxTurns: 8, maxContextTokens: 1 << 20, ...variant });
    const policies = [randomPolicy(tok, cfg, 1), ...(spec.solve ? [oraclePolicy(tok, cfg)] : [])];
    for (const policy of policies) {
      for (const mode of ['train', 'val'] as const) {
        const groups = new EnvGroups({
          tags: [{ env: id, nGroups: Math.max(1, Math.floor(episodes / 2)) }],
          groupSize: 1,
          mode,
          seed: mode === 'train' ? 10000 : 123,
        });
        const batch = await rollout({ groups, policy, tokenizer: tok, agent: cfg });
        for (const e of batch.episodes) {
          if (cfg.contextWindowMode === 'single_turn') {
            // the texts single-turn mode shows: decode each turn's exact prompt
            for (const t of e.turns) texts.push(tok.decode(t.promptIds) + t.response);
          } else {
            texts.push(chatml.render(episodeMessages(e, cfg)));
          }
        }
        await groups.close();
      }
    }
  }
}

const files = trainTinyTokenizer(texts, { vocabSize });
saveTokenizerFiles(out, files);
const trained = loadTokenizer(out);
const bytes = texts.reduce((a, t) => a + new TextEncoder().encode(t).length, 0);
const tokens = texts.reduce((a, t) => a + trained.encode(t).length, 0);
console.log(
  `trained on ${texts.length} transcripts of ${listEnvs().length} envs (${bytes} bytes): vocab ${trained.vocabSize}, ${tokens} tokens, ${(bytes / tokens).toFixed(2)} bytes/token -> ${out}`,
);
