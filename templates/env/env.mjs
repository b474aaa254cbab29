// __ENV_ID__: reach the target number exactly, one step of +1 or +2 per action. Written by `ragen new env`; make it
// yours: the observation is what the model reads, the action is the text inside its <answer>, the reward and
// `info.success` are what training maximises. docs/environments.md explains the contract; docs/library.md the rest.
import { z } from 'zod';
import { invalidInfo, matchActionName, registerEnv, ResetNeededError } from 'ragen-ts';

const Config = z.object({ maxTarget: z.number().int().min(2).default(6) });

export class CounterEnv {
  instruction = 'You move a counter from 0 to the target. Answer +1 or +2; passing the target loses.';
  legend = '';
  actionNames = ['+1', '+2'];
  #target = 0;
  #value = 0;
  #done = true;

  constructor(config) {
    this.config = config;
  }

  reset({ seed }) {
    this.#target = 2 + (Math.abs(seed) % (this.config.maxTarget - 1)); // the task comes from the seed alone
    this.#value = 0;
    this.#done = false;
    return { observation: this.render(), info: { success: false, actionIsValid: true, actionIsEffective: false } };
  }

  step(action) {
    if (this.#done) throw new ResetNeededError('__ENV_ID__: call reset() first.');
    const i = matchActionName(this.actionNames, action);
    if (i < 0) {
      return {
        observation: this.render(),
        reward: 0,
        terminated: false,
        truncated: false,
        info: invalidInfo('Answer +1 or +2.'),
      };
    }
    this.#value += i + 1;
    const success = this.#value === this.#target;
    this.#done = this.#value >= this.#target;
    const info = { success, actionIsValid: true, actionIsEffective: true };
    return { observation: this.render(), reward: success ? 1 : 0, terminated: this.#done, truncated: false, info };
  }

  render() {
    return `Counter ${this.#value}, target ${this.#target}.`;
  }

  close() {}
}

registerEnv('__ENV_ID__', {
  description: 'Reach the target number exactly with +1 and +2 steps.',
  schema: Config,
  create: (config) => new CounterEnv(config),
  maxActionsPerEpisode: 6,
  // a solver makes `ragen eval --policy oracle` and SFT demonstrations possible: +2 while it fits, then +1
  solve: (config, seed) => {
    const target = 2 + (Math.abs(seed) % (config.maxTarget - 1));
    return [...Array(Math.floor(target / 2)).fill('+2'), ...(target % 2 ? ['+1'] : [])];
  },
});
