// Tokens per oracle episode (full multi-turn context, one training sample) under three tokenizers:
// raw bytes, our tiny BPE (models/tokenizer-tiny) and Qwen's. Usage: npx tsx src/bench/scripts/episode-tokens.ts
// [--groups 32]
import '../../envs/index.js'; // the built-in environments
import { envSpec, listEnvs } from '../../env/index.js';
import {
  byteTokenizer,
  loadQwenTokenizer,
  loadTokenizer,
  tinyTokenizerDir,
  type Tokenizer,
} from '../../tokenizer/index.js';
import { EnvGroups, agentConfig, oraclePolicy, rollout } from '../../agent/index.js';

const i = process.argv.indexOf('--groups');
const nGroups = i >= 0 ? Number(process.argv[i + 1]) : 32;
const tokenizers: [string, Tokenizer][] = [
  ['bytes', byteTokenizer()],
  ['tiny', loadTokenizer(tinyTokenizerDir())],
  ['qwen', loadQwenTokenizer()],
];
const cfg = agentConfig({ maxContextTokens: 1 << 20 });
console.log(`mean tokens per oracle episode (${nGroups} val seeds from 123, agent defaults, full context)`);
console.log(['env'.padEnd(26), ...tokenizers.map(([n]) => n.padStart(8)), 'bytes/tiny'.padStart(11)].join(''));
for (const { id } of listEnvs()) {
  const spec = envSpec(id);
  if (!spec.solve) continue;
  const means: number[] = [];
  for (const [, tok] of tokenizers) {
    const maxTurns = Math.ceil(spec.maxActionsPerEpisode / cfg.maxActionsPerTurn);
    const groups = new EnvGroups({ tags: [{ env: id, nGroups, maxTurns }], groupSize: 1, mode: 'val', seed: 123 });
    const batch = await rollout({ groups, policy: oraclePolicy(tok, cfg), tokenizer: tok, agent: cfg });
    means.push(batch.samples.reduce((a, s) => a + s.length, 0) / batch.samples.length);
  }
  console.log(
    [
      id.padEnd(26),
      ...means.map((m) => m.toFixed(0).padStart(8)),
      (means[0]! / means[1]!).toFixed(2).padStart(11),
    ].join(''),
  );
}
