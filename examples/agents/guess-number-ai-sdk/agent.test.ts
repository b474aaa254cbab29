// The AI SDK example end to end: agent.mjs run by the gateway's runner over a scripted policy that plays binary
// search in Qwen's tool format. The agent's tool calls reach its tool (each answer is in the next call's prompt),
// the calls are the SFT demos token for token, the ids trained on are the ids sampled, and the reward arrives;
// then one greedy episode on the SFT'd model, whose recorded log-probs are the engine's own.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sequenceBatch, type Generation, type SamplingParams } from '../../../src/engine/index.js';
import { loadTokenizer, type Tokenizer } from '../../../src/index.js';
import { agentProgram } from '../../../src/agent/index.js';
import { ScriptedEngine } from '../../../src/agent/testing.js';
import { localServeTarget } from '../../../src/serve/index.js';
import { Gateway, agentRollout, toolDemoCalls } from '../../../src/gateway/index.js';
import { binarySearchGuesses, guessNumberSecret } from '../../../src/env/guess-number/index.js';
import { guessNumberDemo } from './demos.js';
import { MAX_NUMBER, answer, secretOf } from './task.mjs';

/** Binary search read off the prompt: the guesses in its tool calls and the answers in its tool responses. */
function binarySearchPolicy(prompt: string): string {
  const guesses = [...prompt.matchAll(/"arguments": \{"n": (\d+)\}/g)].map((m) => Number(m[1]));
  const answers = [...prompt.matchAll(/<tool_response>\n(\w+)\n<\/tool_response>/g)].map((m) => m[1]);
  let lo = 1;
  let hi = MAX_NUMBER;
  guesses.forEach((g, i) => {
    if (answers[i] === 'higher') lo = g + 1;
    if (answers[i] === 'lower') hi = g - 1;
  });
  return `<tool_call>\n{"name": "guess", "arguments": {"n": ${Math.floor((lo + hi) / 2)}}}\n</tool_call><|im_end|>`;
}

/** A ScriptedEngine that keeps what it sampled, in order. */
class RecordingEngine extends ScriptedEngine {
  sampled: Generation[] = [];
  override async generate(prompts: readonly (readonly number[])[], params: SamplingParams): Promise<Generation[]> {
    const out = await super.generate(prompts, params);
    this.sampled.push(...out);
    return out;
  }
}

/** The SFT'd model; its tokenizer (ragen-tiny's plus Qwen's tool tags as single tokens) renders every prompt here. */
const GUESS_NUMBER_TINY = join(import.meta.dirname, '..', '..', '..', 'models', 'guess-number-tiny');

let tokenizer: Tokenizer;
let engine: RecordingEngine;
let gateway: Gateway;
beforeAll(async () => {
  tokenizer = loadTokenizer(GUESS_NUMBER_TINY);
  engine = new RecordingEngine(tokenizer, binarySearchPolicy);
  gateway = new Gateway({ engine, tokenizer, modelName: 'policy', contextLength: 1024, vocabSize: tokenizer.vocabSize, maxTokens: 64 });
  await gateway.listen(0);
});
afterAll(async () => {
  await gateway.close();
});

describe('the Vercel AI SDK guess-number agent through the gateway', () => {
  it('plays through tool calls, reports its reward, and is trained on exactly what was sampled', async () => {
    const program = agentProgram({ command: `node ${JSON.stringify(join(import.meta.dirname, 'agent.mjs'))}`, timeoutS: 30, concurrency: 2 });
    const { batch, outcomes } = await agentRollout(gateway, program, { tag: 'GuessNumberAgent', groups: 2, groupSize: 1, seedBase: 7, idPrefix: 'e2e' });

    if (process.env.DEBUG_E2E) console.log(JSON.stringify(outcomes.map((o) => o.log.calls.map((c) => c.text))));
    expect(outcomes.map((o) => [o.status, o.reward, o.stderrTail])).toEqual([['ok', 1, ''], ['ok', 1, '']]);
    for (const o of outcomes) {
      // The calls are the demos of this seed token for token: every guess reached the tool, every answer came back
      // into the next prompt, and the SFT data is rendered as the gateway renders the agent's calls.
      const demo = toolDemoCalls(tokenizer, guessNumberDemo(o.task.seed));
      expect(o.log.calls.length).toBe(binarySearchGuesses(secretOf(o.task.seed), MAX_NUMBER).length);
      expect(o.log.calls.map((c) => c.promptIds)).toEqual(demo.map((c) => c.promptIds));
      expect(o.log.calls.map((c) => c.completionIds)).toEqual(demo.map((c) => c.completionIds));
    }
    // One merged sequence per episode; its trained ids and log-probs are the sampled ones, in order.
    expect(batch.samples.map((s) => s.episode)).toEqual([0, 1]);
    const trained = batch.samples.flatMap((s) => s.ids.filter((_, t) => s.lossMask[t] === 1));
    const trainedLogprobs = batch.samples.flatMap((s) => s.logprobs.filter((_, t) => s.lossMask[t] === 1));
    const byEpisode = outcomes.flatMap((o) => o.log.calls.flatMap((c) => c.completionIds));
    expect(trained).toEqual(byEpisode);
    expect([...trained].sort()).toEqual(engine.sampled.flatMap((g) => g.tokens).sort());
    expect(trainedLogprobs).toEqual(trained.map(ScriptedEngine.fakeLogprob));
    expect(batch.samples.map((s) => s.score)).toEqual([1, 1]);
  }, 60_000);

  it('a garbled second call ends the episode unscored and is counted as that turn\'s format error', async () => {
    // binary search, but the second call loses a closing brace: the SDK sees text, not a call, and the episode ends
    const garbling = new ScriptedEngine(tokenizer, (prompt) => (prompt.includes('<tool_response>') ? binarySearchPolicy(prompt).replace('}}', '}') : binarySearchPolicy(prompt)));
    const g = new Gateway({ engine: garbling, tokenizer, modelName: 'policy', contextLength: 1024, vocabSize: tokenizer.vocabSize, maxTokens: 64 });
    await g.listen(0);
    try {
      const program = agentProgram({ command: `node ${JSON.stringify(join(import.meta.dirname, 'agent.mjs'))}`, timeoutS: 30 });
      // seed 7's number is not binary search's first guess (8), so every episode makes a second call
      const { batch } = await agentRollout(g, program, { tag: 'GuessNumberAgent', groups: 1, groupSize: 1, seedBase: 7, idPrefix: 'garbled' });
      const [episode] = batch.episodes;
      expect(episode!.turns.map((t) => t.formatError !== undefined)).toEqual([false, true]);
      expect([episode!.success, episode!.score]).toEqual([false, 0]);
      expect(batch.metrics['GuessNumberAgent']!['format_error_rate']).toBe(0.5);
    } finally {
      await g.close();
    }
  }, 60_000);

  it('hides the same number as the built-in GuessNumber env for every seed', () => {
    for (let seed = 0; seed < 2000; seed += 7) expect(secretOf(seed)).toBe(guessNumberSecret(seed, MAX_NUMBER));
    expect(secretOf(4_000_000_123)).toBe(guessNumberSecret(4_000_000_123, MAX_NUMBER));
  });
});

describe('the AI SDK agent on its SFT\'d model (models/guess-number-tiny)', () => {
  it('samples real tool calls whose answers reach the next prompt, and records the ids the model sampled', async () => {
    const target = await localServeTarget(GUESS_NUMBER_TINY, (d) => d, { name: 'policy' });
    const real = new Gateway({ ...target, maxTokens: 64, sampling: { temperature: 0, topP: 1, topK: 0 } });
    await real.listen(0);
    try {
      const program = agentProgram({ command: `node ${JSON.stringify(join(import.meta.dirname, 'agent.mjs'))}`, timeoutS: 60 });
      const { batch, outcomes } = await agentRollout(real, program, { tag: 'GuessNumberAgent', groups: 1, groupSize: 1, seedBase: 124, idPrefix: 'real' });
      const [o] = outcomes;
      expect([o!.status, o!.stderrTail]).toEqual(['ok', '']);
      const calls = o!.log.calls;
      expect(calls.length).toBeGreaterThanOrEqual(2);
      const secret = secretOf(124); // 15: binary search needs 4 guesses
      for (const [k, c] of calls.entries()) {
        // The engine's own teacher-forced log-probs of the recorded ids are the recorded ones: these ids were sampled.
        const seq = [...c.promptIds, ...c.completionIds];
        const out = await target.engine.forward(sequenceBatch([seq]), { role: 'policy' });
        const scored = Array.from(out.logprobs.slice(c.promptIds.length, seq.length));
        scored.forEach((lp, t) => expect(lp).toBeCloseTo(c.logprobs[t]!, 3));
        // The guess this call made, answered by the agent's tool, is in the next call's prompt.
        const n = /"arguments": \{"n": (\d+)\}/.exec(c.text)?.[1];
        if (k + 1 < calls.length) expect(tokenizer.decode(calls[k + 1]!.promptIds).endsWith(`<tool_response>\n${answer(Number(n), secret)}\n</tool_response><|im_end|>\n<|im_start|>assistant\n`)).toBe(true);
      }
      expect(o!.reward).toBe(calls.some((c) => c.text.includes(`{"n": ${secret}}`)) ? 1 : 0);
      const trained = batch.samples.flatMap((s) => s.ids.filter((_, t) => s.lossMask[t] === 1));
      expect(trained).toEqual(calls.flatMap((c) => c.completionIds));
    } finally {
      await real.close();
      target.dispose();
    }
  }, 60_000);
});

