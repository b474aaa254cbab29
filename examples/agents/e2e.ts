// The end-to-end check every guess-number agent passes, whatever framework wrote it: run by the gateway's runner
// over a scripted binary-search policy (its calls are the AI SDK demos token for token: the same prompts), trained
// on exactly what was sampled, rewarded; then one greedy episode on models/guess-number-tiny.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sequenceBatch } from '../../src/engine/index.js';
import { loadTokenizer, type Tokenizer } from '../../src/index.js';
import { agentProgram } from '../../src/agent/index.js';
import { ScriptedEngine } from '../../src/agent/testing.js';
import { localServeTarget } from '../../src/serve/index.js';
import { Gateway, agentRollout, toolDemoCalls } from '../../src/gateway/index.js';
import { scriptedGateway } from '../../src/gateway/testing.js';
import { binarySearchGuesses } from '../../src/envs/index.js';
import { guessNumberDemo } from './guess-number-ai-sdk/demos.js';
import { MAX_NUMBER, answer, secretOf } from './guess-number-ai-sdk/task.mjs';
import { RecordingEngine, binarySearchPolicy, commandOf, garbleCall, type ExampleName } from './testing.js';
import { readToolCallBlocks, toolCallText } from '../../src/tokenizer/index.js';

export const GUESS_NUMBER_TINY = join(import.meta.dirname, '..', '..', 'models', 'guess-number-tiny');

/** The `n` of the `guess` call in a reply written in guess-number-tiny's tool format; undefined when there is none. */
function guessOf(text: string): number | undefined {
  const [call] = readToolCallBlocks(text, loadTokenizer(GUESS_NUMBER_TINY).toolFormat);
  return call?.ok && call.name === 'guess' && typeof call.arguments['n'] === 'number' ? call.arguments['n'] : undefined;
}

/** The suite for example `name` (its own agent.test.ts calls this). */
export function guessNumberAgentSuite(name: ExampleName, label: string, o: { boundedSchema?: boolean } = {}): void {
  let tokenizer: Tokenizer;
  let engine: RecordingEngine;
  let gateway: Gateway;
  beforeAll(async () => {
    tokenizer = loadTokenizer(GUESS_NUMBER_TINY); // the SFT'd model's: the demos' prompts are the ids it learnt
    engine = new RecordingEngine(tokenizer, (p) => binarySearchPolicy(p, tokenizer.toolFormat));
    gateway = await scriptedGateway(engine, tokenizer, { maxTokens: 64 });
  });
  afterAll(async () => {
    await gateway.close();
  });

  describe(`item 1: the ${label} guess-number agent through the gateway`, () => {
    it("plays through tool calls with the AI SDK agent's prompts, reports its reward, and is trained on exactly what was sampled", async () => {
      const program = agentProgram({ command: commandOf(name), timeoutS: 60, concurrency: 2 });
      const { batch, outcomes } = await agentRollout(gateway, program, {
        tag: 'GuessNumberAgent',
        groups: 2,
        groupSize: 1,
        seedBase: 7,
        idPrefix: `e2e-${name}`,
      });
      expect(outcomes.map((o) => [o.status, o.reward, o.stderrTail])).toEqual([
        ['ok', 1, ''],
        ['ok', 1, ''],
      ]);
      for (const o of outcomes) {
        // Token for token the calls of the AI SDK agent's SFT demos (what guess-number-tiny learnt): same prompts.
        const demo = toolDemoCalls(tokenizer, guessNumberDemo(o.task.seed));
        expect(o.log.calls.length).toBe(binarySearchGuesses(secretOf(o.task.seed), MAX_NUMBER).length);
        expect(o.log.calls.map((c) => c.promptIds)).toEqual(demo.map((c) => c.promptIds));
        expect(o.log.calls.map((c) => c.completionIds)).toEqual(demo.map((c) => c.completionIds));
      }
      // One merged sequence per episode; its trained ids and log-probs are the sampled ones, in order.
      expect(batch.samples.map((s) => s.episode)).toEqual([0, 1]);
      const trained = batch.samples.flatMap((s) => s.ids.filter((_, t) => s.lossMask[t] === 1));
      expect(trained).toEqual(outcomes.flatMap((o) => o.log.calls.flatMap((c) => c.completionIds)));
      expect([...trained].sort()).toEqual(engine.sampled.flatMap((g) => g.tokens).sort());
      expect(batch.samples.flatMap((s) => s.logprobs.filter((_, t) => s.lossMask[t] === 1))).toEqual(
        trained.map(ScriptedEngine.fakeLogprob),
      );
      expect(batch.samples.map((s) => s.score)).toEqual([1, 1]);
    }, 90_000);

    it("a garbled second call ends the episode with its format penalty, exit 0, counted as that turn's format error", async () => {
      const garbling = new ScriptedEngine(tokenizer, (p) =>
        p.includes('<tool_response>')
          ? garbleCall(binarySearchPolicy(p, tokenizer.toolFormat))
          : binarySearchPolicy(p, tokenizer.toolFormat),
      );
      const g = await scriptedGateway(garbling, tokenizer, { maxTokens: 64 });
      try {
        const program = agentProgram({ command: commandOf(name), timeoutS: 60 });
        const { batch, outcomes } = await agentRollout(g, program, {
          tag: 'GuessNumberAgent',
          groups: 1,
          groupSize: 1,
          seedBase: 7,
          idPrefix: `garbled-${name}`,
        });
        expect(outcomes[0]!.status).toBe('ok');
        const [episode] = batch.episodes;
        expect(episode!.turns.map((t) => t.formatError !== undefined)).toEqual([false, true]);
        // the program's reward is 0; the garbled call costs formatPenalty (default -0.1) on its turn
        expect(episode!.turns.map((t) => t.penalty)).toEqual([0, -0.1]);
        expect([episode!.success, episode!.envReturn, episode!.score]).toEqual([false, 0, -0.1]);
      } finally {
        await g.close();
      }
    }, 90_000);
  });

  // the AI SDK example's schema has no range: a guess of 40 is answered "lower" and the episode plays on
  if (o.boundedSchema ?? true)
    describe(`the ${label} agent facing a guess outside its schema`, () => {
      it("a guess of 40 (the zod schema says 1..16) is the model's mistake: the program exits 0 with reward 0", async () => {
        const wild = new ScriptedEngine(
          tokenizer,
          () => `${toolCallText({ name: 'guess', arguments: { n: 40 } }, tokenizer.toolFormat)}<|im_end|>`,
        );
        const g = await scriptedGateway(wild, tokenizer, { maxTokens: 64 });
        try {
          const { outcomes } = await agentRollout(g, agentProgram({ command: commandOf(name), timeoutS: 60 }), {
            tag: 'GuessNumberAgent',
            groups: 1,
            groupSize: 1,
            seedBase: 7,
            idPrefix: `wild-${name}`,
          });
          expect(outcomes.map((o) => [o.status, o.reward])).toEqual([['ok', 0]]);
        } finally {
          await g.close();
        }
      }, 90_000);
    });

  describe(`the ${label} agent on the SFT'd model (models/guess-number-tiny)`, () => {
    it('samples real tool calls whose answers reach the next prompt, and records the ids the model sampled', async () => {
      const target = await localServeTarget(GUESS_NUMBER_TINY, (d) => d, { name: 'policy' });
      const real = new Gateway({ ...target, maxTokens: 64, sampling: { temperature: 0, topP: 1, topK: 0 } });
      await real.listen(0);
      try {
        const program = agentProgram({ command: commandOf(name), timeoutS: 90 });
        const { batch, outcomes } = await agentRollout(real, program, {
          tag: 'GuessNumberAgent',
          groups: 1,
          groupSize: 1,
          seedBase: 124,
          idPrefix: `real-${name}`,
        });
        const [o] = outcomes;
        expect([o!.status, o!.stderrTail]).toEqual(['ok', '']);
        const calls = o!.log.calls;
        expect(calls.length).toBeGreaterThanOrEqual(2);
        const secret = secretOf(124); // 15: binary search needs 4 guesses
        for (const [k, c] of calls.entries()) {
          const seq = [...c.promptIds, ...c.completionIds];
          const out = await target.engine.forward(sequenceBatch([seq]), { role: 'policy' });
          Array.from(out.logprobs.slice(c.promptIds.length, seq.length)).forEach((lp, t) =>
            expect(lp).toBeCloseTo(c.logprobs[t]!, 3),
          );
          const n = guessOf(c.text);
          if (k + 1 < calls.length)
            expect(
              tokenizer
                .decode(calls[k + 1]!.promptIds)
                .endsWith(`<tool_response>\n${answer(n, secret)}\n</tool_response><|im_end|>\n<|im_start|>assistant\n`),
            ).toBe(true);
        }
        expect(o!.reward).toBe(calls.some((c) => guessOf(c.text) === secret) ? 1 : 0);
        expect(batch.samples.flatMap((s) => s.ids.filter((_, t) => s.lossMask[t] === 1))).toEqual(
          calls.flatMap((c) => c.completionIds),
        );
      } finally {
        await real.close();
        target.dispose();
      }
    }, 90_000);
  });
}
