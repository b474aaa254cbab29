// Test doubles for the agent loop: an Engine that writes scripted text through a tokenizer, so the loop
// can be exercised (stop ids, stop strings, length cuts, log-probs) without a model.
import type { Engine, ForwardResult, Generation, SamplingParams } from '../engine/index.js';
import type { Tokenizer } from '../tokenizer/index.js';
import { z } from 'zod';
import {
  invalidInfo,
  listEnvs,
  matchActionName,
  registerEnv,
  type Env,
  type ResetOptions,
  type ResetResult,
  type StepResult,
} from '../env/index.js';

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

/**
 * `TestCorridor`: a corridor of `length` cells, the player starts at the left end and must reach the
 * goal at the right end. Actions Left/Right; -0.1 per step, +1 on the goal; `step` is async (like an
 * env behind a network) so the loop's concurrency is exercised. Registered on first call.
 */
export function registerTestCorridor(): void {
  if (listEnvs().some((e) => e.id === 'TestCorridor')) return;
  const schema = z.object({ length: z.number().int().min(2).default(4) });
  registerEnv<{ length: number }>('TestCorridor', {
    description: 'test corridor',
    schema,
    maxActionsPerEpisode: 6,
    create: (config) => new Corridor(config.length),
    solve: (config) => Array.from({ length: config.length - 1 }, () => 'Right'),
  });
}

/** Most `TestCorridor.step` calls in flight at once (shows that the loop steps envs concurrently). */
export const corridorSteps = { inFlight: 0, maxInFlight: 0 };

class Corridor implements Env {
  readonly instruction = 'Walk to the goal G.';
  readonly legend = 'P is you, G is the goal, _ is floor.';
  readonly actionNames = ['Left', 'Right'];
  private pos = 0;
  private done = true;
  constructor(private readonly length: number) {}
  render(): string {
    return Array.from({ length: this.length }, (_, i) =>
      i === this.pos ? 'P' : i === this.length - 1 ? 'G' : '_',
    ).join('');
  }
  reset(_: ResetOptions): ResetResult {
    this.pos = 0;
    this.done = false;
    return { observation: this.render(), info: { success: false, actionIsValid: true, actionIsEffective: false } };
  }
  async step(action: string): Promise<StepResult> {
    if (this.done) throw new Error('step after done');
    corridorSteps.inFlight++;
    corridorSteps.maxInFlight = Math.max(corridorSteps.maxInFlight, corridorSteps.inFlight);
    await new Promise((r) => setTimeout(r, 0));
    corridorSteps.inFlight--;
    const a = matchActionName(this.actionNames, action);
    if (a < 0)
      return {
        observation: this.render(),
        reward: 0,
        terminated: false,
        truncated: false,
        info: invalidInfo(`unknown action ${action}`),
      };
    const before = this.pos;
    this.pos = Math.max(0, Math.min(this.length - 1, this.pos + (a === 1 ? 1 : -1)));
    const success = this.pos === this.length - 1;
    this.done = success;
    return {
      observation: this.render(),
      reward: success ? 1 : -0.1,
      terminated: success,
      truncated: false,
      info: { success, actionIsValid: true, actionIsEffective: before !== this.pos },
    };
  }
  close(): void {}
}
