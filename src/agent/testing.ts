// Test doubles for the agent loop: an Engine that writes scripted text through a tokenizer, so the loop
// can be exercised (stop ids, stop strings, length cuts, log-probs) without a model.
import type { Engine, ForwardResult, Generation, SamplingParams } from '../engine/index.js';
import type { Tokenizer } from '../tokenizer/index.js';

/**
 * An Engine whose "model" is `script(promptText, index)`: the returned text is encoded and sampled
 * token by token, honouring `stopTokenIds`, `stopStrings` and `maxNewTokens` like a real engine.
 * Fake log-probs: -(1 + id % 7) / 10, so tests can check they are carried through unchanged.
 */
export class ScriptedEngine implements Engine {
  readonly kind = 'scripted';
  calls: { prompts: number[][]; params: SamplingParams }[] = [];

  constructor(
    private readonly tokenizer: Tokenizer,
    private readonly script: (promptText: string, index: number) => string,
  ) {}

  static fakeLogprob(id: number): number {
    return -(1 + (id % 7)) / 10;
  }

  async generate(prompts: readonly (readonly number[])[], params: SamplingParams): Promise<Generation[]> {
    this.calls.push({ prompts: prompts.map((p) => p.slice()), params });
    return prompts.map((p, i) => {
      const all = this.tokenizer.encode(this.script(this.tokenizer.decode(p), i));
      const tokens: number[] = [];
      let finishReason: Generation['finishReason'] = 'length';
      for (const id of all) {
        if (tokens.length >= params.maxNewTokens) break;
        tokens.push(id);
        if (params.stopTokenIds?.includes(id)) {
          finishReason = 'stop';
          break;
        }
        if (params.stopStrings?.some((s) => this.tokenizer.decode(tokens).includes(s))) {
          finishReason = 'stop';
          break;
        }
      }
      return { tokens, logprobs: tokens.map(ScriptedEngine.fakeLogprob), finishReason };
    });
  }

  async forward(): Promise<ForwardResult> {
    throw new Error('ScriptedEngine.forward is not implemented: it only generates.');
  }
}
