// Countdown: registers the `Countdown` id (RAGEN's tag) with its config schema and solver.
import { registerEnv } from '../../env/index.js';
import { CountdownEnv, countdownTask, type CountdownConfig, countdownSchema } from './countdown-env.js';
import { solveCountdown } from './generator.js';

export { CountdownEnv, countdownTask, type CountdownConfig, countdownSchema } from './countdown-env.js';
export { scoreAnswer, parseExpression, evaluate, type CountdownScore } from './expression.js';
export { generateTask, solveCountdown, type CountdownTask } from './generator.js';

registerEnv<CountdownConfig>('Countdown', {
  description: 'Countdown: reach the target with + - * / using each of 3-4 numbers exactly once (single turn).',
  schema: countdownSchema,
  create: (config) => new CountdownEnv(config),
  maxActionsPerEpisode: 1,
  solve: (config, seed) => {
    const task = countdownTask(config, seed);
    const expr = solveCountdown(task.numbers, task.target);
    return expr === undefined ? undefined : [expr];
  },
});
