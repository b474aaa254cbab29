// How often the policy garbles its tool calls under each framework's agent: episodes of each guess-number agent
// through the gateway on models/guess-number-tiny at the training temperature (1), counted as `ragen train` counts
// `gateway/unparsed_tool_call_rate` (calls whose reply holds tool-call text that does not parse), plus success.
//   npx tsx examples/agents/format-rate.ts [--episodes 16] [--seed 500]
import { parseArgs } from 'node:util';
import { agentProgram } from '../../src/agent/index.js';
import { localServeTarget } from '../../src/serve/index.js';
import { Gateway, agentRollout, unparsedToolCall } from '../../src/gateway/index.js';
import { GUESS_NUMBER_TINY } from './e2e.js';
import { EXAMPLES, commandOf, type ExampleName } from './testing.js';

const { values } = parseArgs({
  options: { episodes: { type: 'string', default: '16' }, seed: { type: 'string', default: '500' } },
});
const episodes = Number(values.episodes);
const target = await localServeTarget(GUESS_NUMBER_TINY, (d) => d, { name: 'policy' });
try {
  for (const name of Object.keys(EXAMPLES) as ExampleName[]) {
    const gateway = new Gateway({ ...target, maxTokens: 64, sampling: { temperature: 1, topP: 1, topK: 0 } });
    await gateway.listen(0);
    try {
      const program = agentProgram({ command: commandOf(name), timeoutS: 120, concurrency: 2 });
      const { outcomes } = await agentRollout(gateway, program, {
        tag: 'GuessNumberAgent',
        groups: episodes,
        groupSize: 1,
        seedBase: Number(values.seed),
        idPrefix: name,
        samplingSeed: 1,
      });
      const calls = outcomes.flatMap((o) => o.log.calls);
      const unparsed = calls.filter((c) => unparsedToolCall(c.text, gateway.toolFormat)).length;
      const ok = outcomes.filter((o) => o.status === 'ok').length;
      const solved = outcomes.filter((o) => (o.reward ?? 0) > 0).length;
      console.log(
        `${name}: ${outcomes.length} episodes (${ok} ok), ${calls.length} calls, unparsed tool-call rate ${(unparsed / calls.length).toFixed(3)} (${unparsed}/${calls.length}), success ${solved}/${outcomes.length}`,
      );
    } finally {
      await gateway.close();
    }
  }
} finally {
  target.dispose();
}
