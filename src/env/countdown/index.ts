// Countdown: registers the `Countdown` id (RAGEN's tag) with its config schema and solver.
import { z } from 'zod';
import { registerEnv } from '../registry.js';
import { CountdownEnv, countdownTask, type CountdownConfig } from './countdown-env.js';
import { solveCountdown } from './generator.js';

export { CountdownEnv, countdownTask, type CountdownConfig } from './countdown-env.js';
export { scoreAnswer, parseExpression, evaluate, type CountdownScore } from './expression.js';
export { generateTask, solveCountdown, type CountdownTask } from './generator.js';

/** Countdown's config: see {@link CountdownConfig} for each field's meaning. */
export const countdownSchema = z
  .object({
    minNumbers: z.number().int().min(2).max(6).default(3),
    maxNumbers: z.number().int().min(2).max(6).default(4),
    maxNumber: z.number().int().min(1).max(10_000).default(100),
    maxTarget: z.number().int().min(1).max(1_000_000).default(100),
    correctScore: z.number().default(1.0),
    formatScore: z.number().default(0.1),
  })
  .refine((c) => c.minNumbers <= c.maxNumbers, { message: 'minNumbers must be <= maxNumbers', path: ['minNumbers'] });

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
