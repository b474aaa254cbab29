// Throughput of the agent loop alone (prompt rendering, tokenization, parsing, env steps) with the oracle
// as the policy, so no model time is included. Usage: npx tsx src/bench/scripts/bench-agent-loop.ts [--groups 128]
import '../../envs/index.js'; // the built-in environments
import { envSpec } from '../../env/index.js';
import { loadQwenTokenizer, loadTokenizer, tinyTokenizerDir, type Tokenizer } from '../../tokenizer/index.js';
import { EnvGroups, agentConfig, oraclePolicy, rollout, type ContextWindowMode } from '../../agent/index.js';

const i = process.argv.indexOf('--groups');
const nGroups = i >= 0 ? Number(process.argv[i + 1]) : 128;
const tokenizers: [string, Tokenizer][] = [
  ['tiny', loadTokenizer(tinyTokenizerDir())],
  ['qwen', loadQwenTokenizer()],
];
console.log(`agent loop with the oracle policy, ${nGroups} episodes per row (val seeds from 123)`);
console.log('env              tokenizer  mode                 episodes/s   turns/s   ms/turn');
for (const env of ['SimpleSokoban', 'SimpleSudoku']) {
  for (const [name, tok] of tokenizers) {
    for (const mode of ['full', 'limited_multi_turn'] as ContextWindowMode[]) {
      const cfg = agentConfig({ contextWindowMode: mode, maxContextWindow: mode === 'full' ? null : 2 });
      const maxTurns = Math.ceil(envSpec(env).maxActionsPerEpisode / cfg.maxActionsPerTurn);
      const groups = new EnvGroups({ tags: [{ env, nGroups, maxTurns }], groupSize: 1, mode: 'val', seed: 123 });
      await rollout({ groups, policy: oraclePolicy(tok, cfg), tokenizer: tok, agent: cfg }); // warm-up
      const t0 = performance.now();
      const batch = await rollout({ groups, policy: oraclePolicy(tok, cfg), tokenizer: tok, agent: cfg });
      const s = (performance.now() - t0) / 1000;
      const turns = batch.episodes.reduce((a, e) => a + e.turns.length, 0);
      console.log(
        `${env.padEnd(16)} ${name.padEnd(10)} ${mode.padEnd(20)} ${(batch.episodes.length / s).toFixed(0).padStart(10)} ${(turns / s).toFixed(0).padStart(9)} ${((1000 * s) / turns).toFixed(3).padStart(9)}`,
      );
    }
  }
}
